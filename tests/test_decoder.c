// test_decoder.c: the shared attention decoder (models/decoder.h).
//
// - The parameter layout: the captioner's checkpoint names in the captioner's order, after
//   what the model registered before them, with the shapes of the config; SatLstmParams's
//   decoder views are these (models/sat_lstm.h registers nothing else but its encoder).
// - The mean annotation over each row's length: the plain mean of its first lengths[b]
//   positions (padding never read, so NaN there changes nothing); lengths NULL equals
//   lengths all L bit for bit.
// - The initial state and the gate against plain loops in double (|fast - ref| <= 1e-6 +
//   1e-5 |ref|; tanh_fast differs from tanh by 4e-7).
// - A whole training pass (decoder_forward_steps, decoder_output_forward,
//   decoder_doubly_stochastic, decoder_backward) on a decoder of its own, against central
//   differences (gradcheck.h: eps 1e-3, 1e-3 + 1e-2 relative), for every parameter and the
//   annotations: additive / query previous, general / query current, none; with and
//   without lengths (and no gradient past a row's length).
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
#include "models/sat_lstm.h"
#include "seq/embedding.h"
#include "seq/vocab.h"
#include "tests/support/gradcheck.h"
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
    SatLstmParams sp;
    DecoderParams dp;
    sat_lstm_params_layout(&sb, &sp, &sc);
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

// --- a training pass ---------------------------------------------------------------------------

enum { PB = 2, PT = 4 };  // rows, steps at most

// A decoder on its own, as a translator embeds it: parameters, gradients (and a scratch set
// for one backward), activations, and a batch of two rows with targets of 3 and 1 words
// (descending, as passes want) over annotations of lengths 4 and 2 (or none).
typedef struct {
    DecoderConfig c;
    Block params, grads, scratch, acts;
    DecoderParams p, g, sg;
    DecoderActs a;
    Decoder d;
    float *keys, *dkeys;  // (PB, L, D)
    int lengths[PB];
} PassFix;

static void pass_fix_init(PassFix *f, AttnKind kind, DecoderQuery query, int nb_vector,
                          int with_lengths, uint64_t seed) {
    memset(f, 0, sizeof *f);
    DecoderConfig c = {.L = 4, .D = 3, .E = 3, .H = 4, .V = 8, .query = query, .lambda = 0.5f,
                       .attn = {.kind = kind, .D = 3, .H = 4, .A = 3}};
    c.nb = nb_vector ? c.D : 1;
    f->c = c;
    decoder_params_layout(&f->params, &f->p, &c);
    decoder_params_layout(&f->grads, &f->g, &c);
    decoder_params_layout(&f->scratch, &f->sg, &c);
    block_alloc(&f->params);
    block_alloc(&f->grads);
    block_alloc(&f->scratch);
    Rng rng;
    rng_seed(&rng, seed);
    decoder_params_init(&f->p, &c, &rng);
    fill_uniform(f->params.data, f->params.numel, -0.8f, 0.8f, &rng);
    decoder_acts_layout(&f->acts, &f->a, &c, PT, PB);
    block_alloc(&f->acts);
    decoder_acts_bind(&f->a);
    const size_t nk = (size_t)PB * c.L * c.D;
    f->keys = xmalloc(nk * sizeof(float));
    f->dkeys = xcalloc(nk, sizeof(float));
    fill_uniform(f->keys, nk, -1.0f, 1.0f, &rng);
    f->lengths[0] = 4, f->lengths[1] = 2;
    // The rows packed by step (models/sat_lstm.c packs captions so, through decoder_pack_rows).
    static const int words[PB][3] = {{4, 7, 5}, {6, 0, 0}};
    static const int lens[PB] = {3, 1};
    DecoderActs *a = &f->a;
    for (int b = 0; b < PB; b++) a->steps[b] = lens[b] + 1;
    a->off[0] = 0;
    for (int t = 0; t < PT; t++) {
        int n = 0;
        for (int b = 0; b < PB; b++)
            if (a->steps[b] > t) n = b + 1;
        a->active[t] = n;
        a->off[t + 1] = a->off[t] + n;
    }
    for (int t = 0; t < PT; t++)
        for (int b = 0; b < a->active[t]; b++) {
            size_t r = decoder_srow(a, t) + b;
            a->in_tok[r] = t == 0 ? VOCAB_START : words[b][t - 1];
            a->target[r] = t < lens[b] ? words[b][t] : VOCAB_END;
        }
    f->d = (Decoder){.cfg = c, .p = &f->p, .g = &f->sg, .a = a, .T = PT, .B = PB,
                     .annot_grad = 1, .lengths = with_lengths ? f->lengths : NULL};
}

static void pass_fix_free(PassFix *f) {
    decoder_acts_release(&f->a);
    block_free(&f->acts);
    block_free(&f->params);
    block_free(&f->grads);
    block_free(&f->scratch);
    free(f->keys), free(f->dkeys);
}

// out[0] = the pass's loss, (cross-entropy + doubly stochastic term) / B.
static void pass_forward(void *ctx, float *out) {
    PassFix *f = ctx;
    const DecoderConfig *c = &f->c;
    DecoderActs *a = &f->a;
    const int L = c->L, D = c->D;
    memcpy(a->annot, f->keys, (size_t)PB * L * D * sizeof(float));
    decoder_mean_annotations(a->mean_a, a->annot, f->d.lengths, PB, L, D);
    decoder_initial_state(a->hs, a->cs, a->mean_a, &f->p, PB, D, c->H);
    attn_prepare(a->prep, a->annot, &f->p.attn, &c->attn, PB, L);
    embedding_forward(a->emb, a->in_tok, f->p.embed, a->off[PT], c->E);
    decoder_forward_steps(&f->d, 0);
    const double ce = decoder_output_forward(&f->d, 0), ds = decoder_doubly_stochastic(&f->d);
    out[0] = (float)((ce + ds) / PB);
}

static void pass_backward(void *ctx, const float *dout) {
    PassFix *f = ctx;
    float loss;
    pass_forward(f, &loss);
    memset(f->scratch.data, 0, f->scratch.numel * sizeof(float));
    decoder_backward(&f->d, 0.0f, 0);
    for (size_t i = 0; i < f->grads.numel; i++) f->grads.data[i] += f->scratch.data[i] * dout[0];
    const size_t nk = (size_t)PB * f->c.L * f->c.D;
    for (size_t i = 0; i < nk; i++) f->dkeys[i] += f->a.dannot[i] * dout[0];
}

// The whole training pass against central differences: every parameter tensor and the
// annotations, Bahdanau's order (additive score, query previous) and Luong's (general score,
// query current), scalar and vector gates, with and without lengths; with lengths the
// annotations past a row's length get exactly no gradient.
static void test_pass_gradcheck(void) {
    static const struct {
        AttnKind kind;
        DecoderQuery query;
        int nb_vector;
    } cases[] = {{ATTN_ADDITIVE, DECODER_QUERY_PREVIOUS, 0},
                 {ATTN_MULTIPLICATIVE, DECODER_QUERY_CURRENT, 1},
                 {ATTN_NONE, DECODER_QUERY_CURRENT, 0}};
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++)
        for (int with_lengths = 0; with_lengths <= 1; with_lengths++) {
            PassFix f;
            pass_fix_init(&f, cases[k].kind, cases[k].query, cases[k].nb_vector, with_lengths,
                          70 + k);
            GradcheckInput in[24];
            int n = 0;
            in[n++] = (GradcheckInput){"annotations", f.keys, f.dkeys, (size_t)PB * f.c.L * f.c.D};
            for (int t = 0; t < f.params.count && n < 24; t++) {
                const BlockTensor *bt = &f.params.tensors[t];
                in[n++] = (GradcheckInput){bt->name, f.params.data + bt->offset,
                                           f.grads.data + bt->offset, bt->numel};
            }
            GradcheckOp op = {.ctx = &f, .forward = pass_forward, .backward = pass_backward,
                              .n_out = 1, .inputs = in, .n_inputs = n, .eps = 1e-3,
                              .atol = 1e-3, .rtol = 1e-2};
            Rng rng;
            rng_seed(&rng, 80 + k);
            char name[96];
            snprintf(name, sizeof name, "decoder pass (%s, query %s, %s)",
                     attn_kind_name(cases[k].kind),
                     cases[k].query == DECODER_QUERY_CURRENT ? "current" : "previous",
                     with_lengths ? "lengths" : "no lengths");
            EXPECT(gradcheck(name, &op, &rng) == 0, "%s: gradient check failed", name);
            if (with_lengths) {
                memset(f.dkeys, 0, (size_t)PB * f.c.L * f.c.D * sizeof(float));
                pass_backward(&f, (const float[]){1.0f});
                for (int i = 2 * f.c.D; i < f.c.L * f.c.D; i++)  // row 1: length 2
                    EXPECT(f.dkeys[(size_t)f.c.L * f.c.D + i] == 0.0f,
                           "%s: gradient %g past row 1's length", name,
                           f.dkeys[(size_t)f.c.L * f.c.D + i]);
            }
            pass_fix_free(&f);
        }
}

int main(void) {
    RUN(test_layout_names_and_order);
    RUN(test_sat_params_are_the_decoders);
    RUN(test_mean_over_lengths);
    RUN(test_initial_state_and_gate);
    RUN(test_step_with_lengths_matches_unpadded);
    RUN(test_pass_gradcheck);
    return test_summary();
}
