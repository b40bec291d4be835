// test_parity_translate_transformer.c: models/translator_transformer (`text translate train
// --model transformer`) against PyTorch's nn.TransformerEncoder/Decoder
// (bench/reference/translator_transformer_ref.py; its `fixture` command writes
// tests/fixtures/translate_tf_*.safetensors).
//
// Each fixture holds a tiny configuration (source vocabulary 7, target 9, S 5, max_len 4,
// d 8, 2 heads, d_ff 8, two encoder and two decoder layers, dropout 0): pre-LN with the
// alignments of the last decoder layer (tf_pre), post-LN with those of layer 0 (tf_post),
// pre-LN with label smoothing 0.1 (tf_smooth); three pairs with ragged sources (S words,
// fewer, one) and targets (max_len words, fewer, none: a lone <end>); and what PyTorch
// computed in float64 from those float32 values: the loss, the teacher-forced alignments
// (tt_attention), every parameter's gradient, and greedy decoding (tt_decode, beam 1) of
// sources of their own: the words, their count and the map layer's cross-attention weights
// of each kept word's step. The reference decodes without a key/value cache (the whole
// decoder on each prefix), so the cache is checked too. Every greedy choice in the fixtures
// is at least 1e-3 from a tie.
//
// Tolerances, |C - reference| <= atol + rtol |reference| element by element:
//   loss, alignments, greedy alignments                rtol 1e-5, atol 1e-6
//   gradients                                          rtol 1e-4, atol 1e-6 * the largest
//                                                      reference gradient of the model
//   greedy words and lengths                           exact
// A mismatch fails naming the fixture, the tensor, the worst element and both values;
// PARITY_VERBOSE=1 prints every tensor's worst error. The last test moves one weight of each
// fixture by 1e-3 and checks the comparison then fails.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/block.h"
#include "core/rng.h"
#include "core/safetensors.h"
#include "models/translator_transformer.h"
#include "tests/support/fixture.h"
#include "tests/support/test.h"

#define FWD_RTOL 1e-5
#define FWD_ATOL 1e-6
#define GRAD_RTOL 1e-4
#define GRAD_ATOL_REL 1e-6

typedef struct {
    SafetensorsFile f;
    char path[512];
    TtModel m;
    int B, ready;
    FixturePairs in;
} Fx;

// The fixture's TtConfig (its field names in the metadata). 0, or -1 after a failure.
static int fx_config(const SafetensorsFile *f, TtConfig *c, int *B) {
    memset(c, 0, sizeof *c);
    double eps;
    if (fixture_meta_int(f, "Vs", &c->Vs) || fixture_meta_int(f, "V", &c->V) ||
        fixture_meta_int(f, "S", &c->S) || fixture_meta_int(f, "max_len", &c->max_len) ||
        fixture_meta_int(f, "d_model", &c->d_model) || fixture_meta_int(f, "heads", &c->heads) ||
        fixture_meta_int(f, "d_ff", &c->d_ff) ||
        fixture_meta_int(f, "enc_layers", &c->enc_layers) ||
        fixture_meta_int(f, "dec_layers", &c->dec_layers) ||
        fixture_meta_int(f, "post_ln", &c->post_ln) ||
        fixture_meta_int(f, "map_layer", &c->map_layer) ||
        fixture_meta_double(f, "label_smoothing", &eps) || fixture_meta_int(f, "B", B))
        return -1;
    c->label_smoothing = (float)eps;
    return 0;
}

// Loads fixture name: the model with its weights and the inputs. 0, or -1 after a failure.
static int fx_load(void *p, const char *name) {
    Fx *x = p;
    memset(x, 0, sizeof *x);
    if (fixture_load(&x->f, x->path, sizeof x->path, name)) return -1;
    TtConfig c;
    if (fx_config(&x->f, &c, &x->B)) return -1;
    Error err = {{0}};
    const int valid = tt_config_check(&c, &err) == 0;
    EXPECT(valid, "%s: %s", x->path, err.msg);
    if (!valid) return -1;
    Rng rng;
    rng_seed(&rng, 1);
    tt_init(&x->m, &c, x->B, &rng);
    x->ready = 1;
    const int in = fixture_pairs_read(&x->in, &x->f, x->B, c.S, c.max_len) == 0;
    if (!fixture_read_params(&x->m.params, &x->f, x->path) || !in) return -1;
    return 0;
}

static void fx_free(void *p) {
    Fx *x = p;
    if (x->ready) tt_free(&x->m);
    fixture_pairs_free(&x->in);
    safetensors_free(&x->f);
}

static Block *fx_params(void *p) { return &((Fx *)p)->m.params; }

// The teacher-forced pass: loss, alignments, every gradient. A training forward (an rng)
// when the fixture smooths its labels (dropout is 0), an evaluation one otherwise.
static int compare_training(void *p, int report) {
    Fx *x = p;
    TtModel *m = &x->m;
    Rng rng;
    rng_seed(&rng, 2);
    const int B = x->B;
    float loss = (float)tt_forward(m, x->in.src, x->in.src_len, x->in.words, x->in.lens, B,
                                   m->cfg.label_smoothing > 0.0f ? &rng : NULL);
    block_zero(&m->grads);
    tt_backward(m);
    const char *w = x->path;
    int ok = 1;
    const float *want = fixture_tensor(&x->f, "output/loss", 1);
    ok &= want && fixture_compare_report(w, "loss", &loss, want, 1, FWD_ATOL, FWD_RTOL, report);
    const size_t nal = (size_t)B * m->Tb * m->Sb;
    want = fixture_tensor(&x->f, "output/alpha", nal);
    ok &= want && fixture_compare_report(w, "alpha", tt_attention(m), want, nal, FWD_ATOL,
                                         FWD_RTOL, report);
    ok &= fixture_compare_grads_model(w, &m->grads, &x->f, GRAD_ATOL_REL, GRAD_RTOL, report);
    return ok;
}

// Greedy decoding: each row's words and count exactly, the map layer's weights of the steps
// that produced them (tt_decode leaves the others zero, as the reference does).
static int compare_greedy(Fx *x, int report) {
    TtModel *m = &x->m;
    const int B = x->B, ML = m->cfg.max_len, S = m->cfg.S;
    const size_t nal = (size_t)(ML + 1) * B * S;
    int *out = calloc((size_t)B * ML, sizeof(int)), *out_len = calloc((size_t)B, sizeof(int));
    float *alpha = calloc(nal, sizeof(float));
    tt_decode(m, x->in.dsrc, x->in.dsrc_len, B, 1, 0.0f, out, out_len, NULL, alpha);
    int ok = 1;
    const float *want_len = fixture_tensor(&x->f, "output/greedy_len", (size_t)B);
    const float *want_words = fixture_tensor(&x->f, "output/greedy_words", (size_t)B * ML);
    const float *want_alpha = fixture_tensor(&x->f, "output/greedy_alpha", nal);
    if (!want_len || !want_words || !want_alpha) ok = 0;
    for (int b = 0; ok && b < B; b++)
        ok &= fixture_compare_words(x->path, b, out + (size_t)b * ML, out_len[b],
                                    want_words + (size_t)b * ML, (int)want_len[b], report);
    if (ok)
        ok &= fixture_compare_report(x->path, "greedy alpha", alpha, want_alpha, nal, FWD_ATOL,
                                     FWD_RTOL, report);
    free(out), free(out_len), free(alpha);
    return ok;
}

static int compare(void *x, int report) {
    const int train = compare_training(x, report);
    return compare_greedy(x, report) && train;
}

// Greedy decoding with the moved weight: the words may stay; the alignments move.
static void greedy_moved(void *x, const FixturePerturbation *c, const BlockTensor *t) {
    (void)t;
    EXPECT(!compare_greedy(x, 0), "%s: greedy with %s[%zu] + 1e-3 still matches", c->fixture,
           c->tensor, c->index);
}

static const FixtureSuite suite = {sizeof(Fx), fx_load, fx_free, fx_params, compare,
                                   compare_training, greedy_moved};

static void test_parity_pre_ln(void) { fixture_check(&suite, "translate_tf_pre.safetensors"); }
static void test_parity_post_ln(void) { fixture_check(&suite, "translate_tf_post.safetensors"); }
static void test_parity_label_smoothing(void) {
    fixture_check(&suite, "translate_tf_smooth.safetensors");
}

// The comparison must be able to fail: one weight moved by 1e-3 (the map layer's
// cross-attention query projection, the first encoder layer's feed-forward, the target
// embedding of <start>) no longer matches, in training and in greedy decoding (the words
// may stay; the alignments move).
static void test_parity_perturbed_weight_fails(void) {
    static const FixturePerturbation cases[] = {
        {"translate_tf_pre.safetensors", "decoder.layers.1.multihead_attn.in_proj_weight", 3},
        {"translate_tf_post.safetensors", "encoder.layers.0.linear1.weight", 5},
        {"translate_tf_smooth.safetensors", "tgt.embed", 10}};
    fixture_check_perturbed(&suite, cases, sizeof cases / sizeof *cases);
}

int main(void) {
    RUN(test_parity_pre_ln);
    RUN(test_parity_post_ln);
    RUN(test_parity_label_smoothing);
    RUN(test_parity_perturbed_weight_fails);
    return test_summary();
}
