// test_sat_transformer.c: the captioner's Transformer decoder (models/sat_transformer.h):
// whole-model gradient checks on tiny sizes (the CNN with pre-LN, an encoder layer and
// dropout; features with post-LN), decoding with the key/value cache (beam 1) against greedy
// decoding by full teacher-forced passes and their logits, beam 3 over the cache against beam
// 3 over full passes, beam search's captions and maps, two data-parallel replicas (through
// SatModel, on images and on features) against one model, and the configuration's checkpoint
// text and refusals.
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/block.h"
#include "core/check.h"
#include "core/rng.h"
#include "models/sat.h"
#include "models/sat_config.h"
#include "models/sat_parallel.h"
#include "models/sat_transformer.h"
#include "models/sat_beam.h"
#include "seq/beam.h"
#include "seq/vocab.h"
#include "tests/support/gradcheck.h"
#include "tests/support/test.h"
#include "tests/support/tiny.h"

enum { TB = TINY_CAP_B, TS = TINY_CAP_S, TV = TINY_CAP_V, TML = TINY_CAP_ML, FL = 6, FD = 5 };

static SatConfig tiny_config(int features) {
    SatConfig c;
    tiny_caption_config(&c);  // grid 2 x 2: L = 4, D = 4
    if (features) c.feat_L = FL, c.feat_D = FD;  // L = 6 on a 3 x 3 grid's first two rows
    c.decoder = SAT_DECODER_TRANSFORMER;
    c.tf = (SatTfConfig){.d_model = 8, .heads = 2, .d_ff = 12, .layers = 2, .enc_layers = 1,
                         .positions = 8, .post_ln = 0, .map_layer = -1, .dropout = 0.0f};
    return c;
}

static void finish(SatConfig *c) {
    Error err;
    CHECK(sat_config_finish(c, &err) == 0, "%s", err.msg);
}

typedef struct {
    SatTfModel m;
    float images[TB * 3 * TS * TS];
    int words[TB * TML];
    int lens[TB];
    int train;
} Fixture;

static void fixture_init(Fixture *f, const SatConfig *c, uint64_t seed) {
    Rng rng;
    rng_seed(&rng, seed);
    sat_tf_init(&f->m, c, &rng);
    sat_tf_alloc_acts(&f->m, TB);
    // Parameters off PyTorch's initial values (biases 0, norms 1) so every term counts.
    for (size_t i = 0; i < f->m.params.numel; i++)
        f->m.params.data[i] += 0.2f * (rng_uniform(&rng) - 0.5f);
    tiny_caption_batch(f->images, f->words, f->lens, &rng);
}

static void model_fwd(void *ctx, float *out) {
    Fixture *f = ctx;
    out[0] = (float)sat_tf_forward(&f->m, f->images, f->words, f->lens, TB, f->train, 5, 0, NULL);
}

static void model_bwd(void *ctx, const float *dout) {
    Fixture *f = ctx;
    float out;
    model_fwd(ctx, &out);
    sat_tf_backward(&f->m);
    for (size_t i = 0; i < f->m.grads.numel; i++) f->m.grads.data[i] *= dout[0];
}

static int check_model(Fixture *f, const char *name) {
    GradcheckOp op = {.ctx = f, .forward = model_fwd, .backward = model_bwd, .n_out = 1,
                      .eps = 1e-3, .atol = 2e-3, .rtol = 2e-2, .max_checks = 12};
    return gradcheck_block(name, op, &f->m.params, &f->m.grads, 11);
}

// The CNN, pre-LN with its final norm, one encoder layer over the grid, and dropout in
// training mode (the same masks each call: the stream is seeded by (seed, first)).
static void test_gradcheck_cnn_pre_ln_dropout(void) {
    SatConfig c = tiny_config(0);
    c.tf.dropout = 0.2f;
    finish(&c);
    Fixture *f = calloc(1, sizeof *f);
    fixture_init(f, &c, 4);
    f->train = 1;
    EXPECT(check_model(f, "sat transformer cnn pre-LN dropout") == 0, "gradient check failed");
    sat_tf_free(&f->m);
    free(f);
}

// Features (no CNN), post-LN, no encoder layer, the maps from the first layer.
static void test_gradcheck_features_post_ln(void) {
    SatConfig c = tiny_config(1);
    c.tf.post_ln = 1;
    c.tf.enc_layers = 0;
    c.tf.map_layer = 0;
    finish(&c);
    Fixture *f = calloc(1, sizeof *f);
    fixture_init(f, &c, 7);
    EXPECT(check_model(f, "sat transformer features post-LN") == 0, "gradient check failed");
    sat_tf_free(&f->m);
    free(f);
}

static double log_softmax_at(const float *z, int V, int k) {
    double mx = z[0], s = 0.0;
    for (int i = 1; i < V; i++) mx = z[i] > mx ? z[i] : mx;
    for (int i = 0; i < V; i++) s += exp(z[i] - mx);
    return z[k] - mx - log(s);
}

// Beam 1 over the cache: its tokens are those greedy decoding by full passes picks (the
// argmax, <pad> and <start> excluded, of each position's logits with the words so far as
// teacher input), its every step's log-probabilities those of the full pass's logits, and its
// maps the full pass's cross-attention of the map layer.
static void test_cached_beam1_equals_full_pass_greedy(void) {
    SatConfig c = tiny_config(0);
    finish(&c);
    Fixture *f = calloc(1, sizeof *f);
    fixture_init(f, &c, 9);
    SatTfModel *m = &f->m;
    const int L = sat_L(&c);
    // Greedy by full passes: position t's word from the pass over the first t words.
    int gw[TB * TML] = {0}, glen[TB] = {0}, done[TB] = {0};
    for (int t = 0; t <= TML; t++) {
        int lens[TB];
        for (int b = 0; b < TB; b++) lens[b] = t;
        sat_tf_forward(m, f->images, gw, lens, TB, 0, 0, 0, NULL);
        for (int b = 0; b < TB; b++) {
            if (done[b]) continue;
            const float *z = m->a.logits + ((size_t)b * m->Tb + t) * TV;
            int best = -1;
            for (int k = 0; k < TV; k++)
                if (k != VOCAB_PAD && k != VOCAB_START && (best < 0 || z[k] > z[best])) best = k;
            if (best == VOCAB_END || t == TML) done[b] = 1;
            else gw[b * TML + t] = best, glen[b] = t + 1;
        }
    }
    int tokens[TB * TML], lens[TB];
    float alphas[TB * TML * 4];
    sat_tf_decode(m, tokens, lens, alphas, f->images, TB, 1, 0.0f);
    int steps = 0;
    for (int b = 0; b < TB; b++) {
        EXPECT(lens[b] == glen[b], "image %d: cached length %d, full-pass greedy %d", b, lens[b], glen[b]);
        for (int k = 0; k < lens[b] && k < glen[b]; k++)
            EXPECT(tokens[b * TML + k] == gw[b * TML + k], "image %d word %d: %d vs %d", b, k,
                   tokens[b * TML + k], gw[b * TML + k]);
        steps += lens[b];
    }
    EXPECT(steps > 0, "every caption empty: the test compares nothing");
    // The full pass over the decoded captions: each step's log-probabilities and maps.
    sat_tf_forward(m, f->images, tokens, lens, TB, 0, 0, 0, NULL);
    const float *maps = sat_tf_attention(m);
    SatTfDecodeCtx d;
    sat_tf_decode_ctx_init(&d, m, f->images, TB, 1);
    int parent[TB], tok[TB];
    float lp[TB * TV];
    for (int t = 0; t <= TML; t++) {
        for (int b = 0; b < TB; b++)
            parent[b] = b, tok[b] = t == 0 ? VOCAB_START : t <= lens[b] ? tokens[b * TML + t - 1] : VOCAB_END;
        sat_tf_beam_step(&d, TB, parent, tok, lp);
        for (int b = 0; b < TB; b++) {
            if (t > lens[b]) continue;
            const float *z = m->a.logits + ((size_t)b * m->Tb + t) * TV;
            for (int k = VOCAB_END; k < TV; k++)
                EXPECT_NEAR(lp[b * TV + k], log_softmax_at(z, TV, k), 1e-5, 1e-4);
            for (int l = 0; l < L; l++)
                EXPECT_NEAR(d.alpha_hist[((size_t)t * TB + b) * L + l],
                            maps[((size_t)b * m->Tb + t) * L + l], 1e-6, 1e-4);
            if (t < lens[b])
                for (int l = 0; l < L; l++)
                    EXPECT_NEAR(alphas[(b * TML + t) * L + l], maps[((size_t)b * m->Tb + t) * L + l],
                                1e-6, 1e-4);
        }
    }
    sat_tf_decode_ctx_free(&d);
    sat_tf_free(m);
    free(f);
}

// Beam 3 on features with more images than the activations' batch (the memory is encoded in
// chunks): captions of in-vocabulary words and maps that sum to 1; beam 1 of one image alone
// equals its row of the batch's.
static void test_beam_captions_and_maps(void) {
    SatConfig c = tiny_config(1);
    finish(&c);
    Fixture *f = calloc(1, sizeof *f);
    fixture_init(f, &c, 3);
    SatTfModel *m = &f->m;
    sat_tf_alloc_acts(m, 2);  // 3 images in chunks of 2
    int tokens[TB * TML], lens[TB];
    float alphas[TB * TML * FL];
    sat_tf_decode(m, tokens, lens, alphas, f->images, TB, 3, 0.7f);
    for (int b = 0; b < TB; b++) {
        EXPECT(lens[b] >= 0 && lens[b] <= TML, "length %d", lens[b]);
        for (int k = 0; k < lens[b]; k++) {
            const int w = tokens[b * TML + k];
            EXPECT(w >= VOCAB_NSPECIAL || w == VOCAB_UNK, "image %d word %d: id %d", b, k, w);
            double s = 0.0;
            for (int l = 0; l < FL; l++) s += alphas[(b * TML + k) * FL + l];
            EXPECT_NEAR(s, 1.0, 1e-5, 0);
        }
    }
    int t1[TB * TML], l1[TB], one[TML], lone;
    sat_tf_decode(m, t1, l1, NULL, f->images, TB, 1, 0.0f);
    sat_tf_decode(m, one, &lone, NULL, f->images + 2 * FL * FD, 1, 1, 0.0f);
    EXPECT(lone == l1[2], "image 2 alone: length %d, in the batch %d", lone, l1[2]);
    for (int k = 0; k < lone && k < l1[2]; k++) EXPECT(one[k] == t1[2 * TML + k], "word %d", k);
    sat_tf_free(m);
    free(f);
}

// Beam search without the cache: each call gathers the rows' word histories and images from
// their parents, appends the tokens, and scores the next word by a full teacher-forced pass
// over every row's history (m's activations hold TB x beam rows).
typedef struct {
    SatTfModel *m;
    const float *images;  // (TB, per)
    int t;
    int hist[2][TB * 3 * TML], img[2][TB * 3];
    float rows_in[TB * 3 * 3 * TS * TS];
} FullBeam;

static void full_beam_step(void *vctx, int n, const int *parent, const int *token, float *logprobs) {
    FullBeam *f = vctx;
    const size_t per = sat_input_floats(&f->m->cfg);
    const int t = f->t, cur = t & 1, prev = cur ^ 1;
    int lens[TB * 3] = {0};
    for (int r = 0; r < n; r++) {
        const int q = parent[r];
        f->img[cur][r] = t == 0 ? q : f->img[prev][q];
        for (int k = 0; k < TML; k++) f->hist[cur][r * TML + k] = t == 0 ? 0 : f->hist[prev][q * TML + k];
        if (t > 0) f->hist[cur][r * TML + t - 1] = token[r];
        lens[r] = t;
        memcpy(f->rows_in + r * per, f->images + f->img[cur][r] * per, per * sizeof(float));
    }
    sat_tf_forward(f->m, f->rows_in, f->hist[cur], lens, n, 0, 0, 0, NULL);
    float z[TB * 3 * TV];
    for (int r = 0; r < n; r++)
        memcpy(z + r * TV, f->m->a.logits + ((size_t)r * f->m->Tb + t) * TV, TV * sizeof(float));
    sat_next_word_logprobs(logprobs, z, n, TV);
    f->t++;
}

// Beam 3 over the cache (tf_decode_gather following the parents) finds the captions and
// scores beam 3 over full passes does.
static void test_cached_beam_equals_full_pass_beam(void) {
    SatConfig c = tiny_config(0);
    finish(&c);
    Fixture *f = calloc(1, sizeof *f);
    fixture_init(f, &c, 9);
    SatTfModel *m = &f->m;
    sat_tf_alloc_acts(m, TB * 3);
    BeamConfig bc = {.beam = 3, .max_len = TML + 1, .length_alpha = 0.7f, .start_id = VOCAB_START,
                     .end_id = VOCAB_END, .V = TV};
    int tok_a[TB * (TML + 1)], len_a[TB], tok_b[TB * (TML + 1)], len_b[TB];
    float sc_a[TB], sc_b[TB];
    FullBeam *full = calloc(1, sizeof *full);
    full->m = m, full->images = f->images;
    beam_search(tok_b, len_b, sc_b, NULL, TB, full, full_beam_step, &bc);
    SatTfDecodeCtx d;
    sat_tf_decode_ctx_init(&d, m, f->images, TB, 3);
    beam_search(tok_a, len_a, sc_a, NULL, TB, &d, sat_tf_beam_step, &bc);
    sat_tf_decode_ctx_free(&d);
    int differ = 0;
    for (int b = 0; b < TB; b++) {
        EXPECT(len_a[b] == len_b[b], "image %d: length %d cached, %d full", b, len_a[b], len_b[b]);
        EXPECT_NEAR(sc_a[b], sc_b[b], 1e-5, 1e-4);
        for (int k = 0; k < len_a[b] && k < len_b[b]; k++) differ += tok_a[b * (TML + 1) + k] != tok_b[b * (TML + 1) + k];
    }
    EXPECT(differ == 0, "%d words differ", differ);
    free(full);
    sat_tf_free(m);
    free(f);
}

// Through SatModel (models/sat.h hands the calls on): two data-parallel replicas' share-weighted
// gradient equals one model's on the whole batch (no dropout: its masks are per share), up to
// float summation order, and their loss the same. With features the shares' sorted
// annotations go into the step's own copy (the Transformer takes none in place: before the
// decoder interface they went to an LSTM buffer it does not have, and the step crashed).
static void check_parallel_matches_serial(int features) {
    SatConfig c = tiny_config(features);
    c.tf.dropout = 0.0f;
    finish(&c);
    Fixture *f = calloc(1, sizeof *f);
    fixture_init(f, &c, 4);  // for the images, words and lens
    sat_tf_free(&f->m);
    SatModel m, w[2];
    Rng rng;
    rng_seed(&rng, 8);
    sat_init(&m, &c, &rng);
    sat_alloc_acts(&m, TB);
    SatLoss one, two;
    sat_forward_backward(&one, &m, f->images, f->words, f->lens, TB, 3, 0);
    float *g1 = malloc(m.grads.numel * sizeof(float));
    memcpy(g1, m.grads.data, m.grads.numel * sizeof(float));
    for (int k = 0; k < 2; k++) sat_replica_init(&w[k], &m), sat_alloc_acts(&w[k], 2);
    sat_forward_backward_parallel(&two, &m, w, 2, f->images, f->words, f->lens, TB, 3);
    EXPECT_NEAR(two.loss, one.loss, 1e-6, 1e-5);
    EXPECT(two.tokens == one.tokens, "tokens %g vs %g", two.tokens, one.tokens);
    double worst = 0.0;
    for (size_t i = 0; i < m.grads.numel; i++) {
        const double d = fabs(m.grads.data[i] - g1[i]) / (1e-4 + fabs(g1[i]));
        if (d > worst) worst = d;
    }
    EXPECT(worst < 1e-3, "the replicas' gradient is %g (relative) from one model's", worst);
    for (int k = 0; k < 2; k++) sat_free(&w[k]);
    sat_free(&m);
    free(g1);
    free(f);
}

static void test_parallel_matches_serial(void) { check_parallel_matches_serial(0); }

static void test_parallel_matches_serial_features(void) { check_parallel_matches_serial(1); }

static void test_config_text(void) {
    SatConfig c = tiny_config(1);
    c.tf.post_ln = 1, c.tf.map_layer = 0, c.tf.dropout = 0.25f, c.tf.warmup = 5;
    finish(&c);
    char text[2048];
    sat_config_format(&c, text, sizeof text);
    EXPECT(strstr(text, "decoder=transformer") != NULL, "no decoder key: %s", text);
    SatConfig back;
    Error err;
    EXPECT(sat_config_parse(&back, text, &err) == 0, "%s", err.msg);
    EXPECT(back.decoder == SAT_DECODER_TRANSFORMER, "decoder lost");
    EXPECT(memcmp(&back.tf, &c.tf, sizeof c.tf) == 0, "sizes lost: %s", text);
    // An LSTM's text has no decoder key, and text without one is an LSTM's.
    SatConfig l;
    sat_config_default(&l);
    l.V = TV;
    finish(&l);
    sat_config_format(&l, text, sizeof text);
    EXPECT(strstr(text, "decoder") == NULL && strstr(text, "tf_") == NULL, "LSTM text: %s", text);
    EXPECT(sat_config_parse(&back, text, &err) == 0 && back.decoder == SAT_DECODER_LSTM, "old text");
}

static void expect_refused(SatConfig c, const char *words) {
    Error err;
    EXPECT(sat_config_finish(&c, &err) != 0, "accepted (wanted '%s')", words);
    EXPECT(strstr(err.msg, words) != NULL, "'%s' lacks '%s'", err.msg, words);
}

static void test_config_refusals(void) {
    SatConfig c = tiny_config(0);
    c.tf.heads = 3;
    expect_refused(c, "--heads 3: must divide --d-model 8");
    c = tiny_config(0);
    c.tf.d_model = 6, c.tf.heads = 2;
    expect_refused(c, "--d-model 6: must be a multiple of 4");
    c = tiny_config(0);
    c.tf.positions = 4;  // max_len 4 takes 5
    expect_refused(c, "--max-len 4: a caption of 4 words takes 5 positions");
    c = tiny_config(0);
    c.tf.map_layer = 2;
    expect_refused(c, "--map-layer");
}

int main(void) {
    RUN(test_config_text);
    RUN(test_config_refusals);
    RUN(test_gradcheck_cnn_pre_ln_dropout);
    RUN(test_gradcheck_features_post_ln);
    RUN(test_cached_beam1_equals_full_pass_greedy);
    RUN(test_beam_captions_and_maps);
    RUN(test_cached_beam_equals_full_pass_beam);
    RUN(test_parallel_matches_serial);
    RUN(test_parallel_matches_serial_features);
    return test_summary();
}
