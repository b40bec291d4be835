// test_parity_translate.c: models/translator (the encoder-decoder translator of `text
// translate`) against the PyTorch reference (bench/reference/translator_ref.py, written from
// the equations of models/translator.h and models/decoder.h; its `fixture` command writes
// tests/fixtures/translate_*.safetensors).
//
// Each fixture holds a tiny configuration (source vocabulary 7, embedding 3, encoder 2 per
// direction, S 5, max_len 4, decoder embedding 3, hidden 4, vocabulary 9) with one of the
// command's attention kinds by its --attention name (bahdanau, luong-general, luong-dot,
// luong-concat, local-m, local-p, none; cli/text_translate_state.h maps the name to the
// decoder's kind and query, as the command does), three pairs with ragged sources (S words,
// fewer, one) and targets (max_len words, fewer, none: a lone <end>), and what PyTorch
// computed in float64 from those float32 values: the annotations (B, L, D), the
// teacher-forced attention weights of every row's steps, the loss and every parameter's
// gradient; then greedy decoding of sources of their own with weights of their own
// (decode_param/): the words, their count and each step's attention weights up to each
// row's <end>. Every greedy choice and every local-p window's rounding in the fixtures is
// at least 1e-3 from a tie, so float32 rounding cannot flip one.
//
// Tolerances, |C - reference| <= atol + rtol |reference| element by element:
//   forward (annotations, alpha, loss, greedy alpha)   rtol 1e-5, atol 1e-6
//   gradients                                          rtol 1e-4, atol 1e-6 * the largest
//                                                      reference gradient of the model
//   greedy words and lengths                           exact
// (the gradients' atol is the model's, as tests/test_parity_text.c says why). A mismatch
// fails naming the fixture, the tensor, the worst element and both values; PARITY_VERBOSE=1
// prints every tensor's worst error. The last test moves one weight of four fixtures by
// 1e-3 and checks the comparison then fails.
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/text_translate_state.h"
#include "core/block.h"
#include "core/rng.h"
#include "core/safetensors.h"
#include "models/translator.h"
#include "tests/support/fixture.h"
#include "tests/support/test.h"

#define FWD_RTOL 1e-5
#define FWD_ATOL 1e-6
#define GRAD_RTOL 1e-4
#define GRAD_ATOL_REL 1e-6

typedef struct {
    SafetensorsFile f;
    char path[512];
    Translator m;
    Block dparams;  // the greedy decoding's weights (decode_param/), the layout of m.params
    int B, ready;
    FixturePairs in;
} Fx;

// The fixture's configuration through the command's --attention name. 0, or -1 after a
// failure.
static int fx_config(const SafetensorsFile *f, const char *path, TranslatorConfig *c, int *B) {
    memset(c, 0, sizeof *c);
    if (fixture_meta_int(f, "Vs", &c->Vs) || fixture_meta_int(f, "Es", &c->Es) ||
        fixture_meta_int(f, "He", &c->He) || fixture_meta_int(f, "S", &c->S) ||
        fixture_meta_int(f, "max_len", &c->max_len) || fixture_meta_int(f, "E", &c->dec.E) ||
        fixture_meta_int(f, "H", &c->dec.H) || fixture_meta_int(f, "V", &c->dec.V) ||
        fixture_meta_int(f, "A", &c->dec.attn.A) ||
        fixture_meta_int(f, "window", &c->dec.attn.window) || fixture_meta_int(f, "B", B))
        return -1;
    const char *name = safetensors_meta(f, "attention");
    const int k = name ? translate_attention_parse(name) : -1;
    EXPECT(k >= 0, "%s: attention %s", path, name ? name : "(none)");
    if (k < 0) return -1;
    const TranslateAttention a = translate_attention(k);
    c->dec.attn.kind = a.kind, c->dec.query = a.query, c->dec.nb = 1;
    return 0;
}

// Loads fixture name: the model with its weights, the decoding weights, the inputs. 0, or
// -1 after a failure.
static int fx_load(void *p, const char *name) {
    Fx *x = p;
    memset(x, 0, sizeof *x);
    if (fixture_load(&x->f, x->path, sizeof x->path, name)) return -1;
    TranslatorConfig c;
    if (fx_config(&x->f, x->path, &c, &x->B)) return -1;
    Rng rng;
    rng_seed(&rng, 1);
    translator_init(&x->m, &c, x->B, &rng);
    x->ready = 1;
    block_layout_like(&x->dparams, &x->m.params);
    block_alloc(&x->dparams);
    Error err = {{0}};
    const int dread = safetensors_read_block(&x->dparams, "decode_param/", &x->f, x->path, &err) == 0;
    EXPECT(dread, "%s", err.msg);
    const int in = fixture_pairs_read(&x->in, &x->f, x->B, c.S, c.max_len) == 0;
    if (!fixture_read_params(&x->m.params, &x->f, x->path) || !dread || !in) return -1;
    return 0;
}

static void fx_free(void *p) {
    Fx *x = p;
    if (x->ready) {
        block_free(&x->dparams);
        translator_free(&x->m);
    }
    fixture_pairs_free(&x->in);
    safetensors_free(&x->f);
}

static Block *fx_params(void *p) { return &((Fx *)p)->m.params; }

// The teacher-forced pass: loss, annotations, every row's attention weights (the decoder
// packs its rows by step: (t, b) is row off[t] + b; steps past a row's <end> are zeros in
// the reference), every gradient.
static int compare_training(void *p, int report) {
    Fx *x = p;
    Translator *m = &x->m;
    const TranslatorConfig *c = &m->cfg;
    const int B = x->B, L = c->dec.L, D = c->dec.D;
    float loss = (float)translator_forward(m, x->in.src, x->in.src_len, x->in.words, x->in.lens, B);
    block_zero(&m->grads);
    translator_backward(m);
    const char *w = x->path;
    int ok = 1;
    const float *want = fixture_tensor(&x->f, "output/loss", 1);
    ok &= want && fixture_compare_report(w, "loss", &loss, want, 1, FWD_ATOL, FWD_RTOL, report);
    const size_t nA = (size_t)B * L * D;
    want = fixture_tensor(&x->f, "output/annot", nA);
    ok &= want && fixture_compare_report(w, "annot", m->a.annot, want, nA, FWD_ATOL, FWD_RTOL, report);
    const int T = m->Tb;
    const size_t nal = (size_t)T * B * L;
    float *alpha = calloc(nal, sizeof(float));
    for (int t = 0; t < T; t++)
        for (int b = 0; b < m->a.active[t]; b++)
            if (m->a.steps[b] > t)
                memcpy(alpha + ((size_t)t * B + b) * L,
                       m->a.alpha + (decoder_srow(&m->a, t) + b) * L, (size_t)L * sizeof(float));
    want = fixture_tensor(&x->f, "output/alpha", nal);
    ok &= want && fixture_compare_report(w, "alpha", alpha, want, nal, FWD_ATOL, FWD_RTOL, report);
    free(alpha);
    // The gradients' atol scales with the largest reference gradient of the whole model.
    ok &= fixture_compare_grads_model(w, &m->grads, &x->f, GRAD_ATOL_REL, GRAD_RTOL, report);
    return ok;
}

// Greedy decoding with the decoding weights (swapped in, then back): each row's words and
// count exactly, its attention weights on the steps up to its <end>.
static int compare_greedy(Fx *x, int report) {
    Translator *m = &x->m;
    const int B = x->B, ML = m->cfg.max_len, L = m->cfg.dec.L;
    const size_t nal = (size_t)(ML + 1) * B * L;
    int *out = calloc((size_t)B * ML, sizeof(int)), *out_len = calloc((size_t)B, sizeof(int));
    float *alpha = calloc(nal, sizeof(float));
    const size_t bytes = m->params.numel * sizeof(float);
    float *keep = malloc(bytes);
    memcpy(keep, m->params.data, bytes);
    memcpy(m->params.data, x->dparams.data, bytes);
    translator_greedy(m, x->in.dsrc, x->in.dsrc_len, B, out, out_len, alpha);
    memcpy(m->params.data, keep, bytes);
    free(keep);
    int ok = 1;
    const float *want_len = fixture_tensor(&x->f, "output/greedy_len", (size_t)B);
    const float *want_words = fixture_tensor(&x->f, "output/greedy_words", (size_t)B * ML);
    const float *want_alpha = fixture_tensor(&x->f, "output/greedy_alpha", nal);
    if (!want_len || !want_words || !want_alpha) ok = 0;
    for (int b = 0; ok && b < B; b++) {
        const int same = fixture_compare_words(x->path, b, out + (size_t)b * ML, out_len[b],
                                               want_words + (size_t)b * ML, (int)want_len[b],
                                               report);
        ok &= same;
        // Steps 0..out_len[b] wrote the row's words and its <end>; later ones are the
        // decoder running on, which the reference need not match.
        for (int t = 0; same && t <= out_len[b]; t++) {
            const size_t r = ((size_t)t * B + b) * L;
            char name[48];
            snprintf(name, sizeof name, "greedy alpha step %d row %d", t, b);
            ok &= fixture_compare_report(x->path, name, alpha + r, want_alpha + r, (size_t)L,
                                         FWD_ATOL, FWD_RTOL, report);
        }
    }
    free(out), free(out_len), free(alpha);
    return ok;
}

static int compare(void *x, int report) {
    const int train = compare_training(x, report);
    return compare_greedy(x, report) && train;
}

// Moves the same element of the decoding weights: its alpha shows the move (none's is
// always 1).
static void greedy_moved(void *p, const FixturePerturbation *c, const BlockTensor *t) {
    Fx *x = p;
    x->dparams.data[t->offset + c->index] += 1e-3f;
    EXPECT(x->m.cfg.dec.L == 1 || !compare_greedy(x, 0), "%s: greedy with %s[%zu] + 1e-3 still matches",
           c->fixture, c->tensor, c->index);
}

static const FixtureSuite suite = {sizeof(Fx), fx_load, fx_free, fx_params, compare,
                                   compare_training, greedy_moved};

static void test_parity_bahdanau(void) { fixture_check(&suite, "translate_bahdanau.safetensors"); }
static void test_parity_luong_general(void) { fixture_check(&suite, "translate_luong_general.safetensors"); }
static void test_parity_luong_dot(void) { fixture_check(&suite, "translate_luong_dot.safetensors"); }
static void test_parity_luong_concat(void) { fixture_check(&suite, "translate_luong_concat.safetensors"); }
static void test_parity_local_m(void) { fixture_check(&suite, "translate_local_m.safetensors"); }
static void test_parity_local_p(void) { fixture_check(&suite, "translate_local_p.safetensors"); }
static void test_parity_none(void) { fixture_check(&suite, "translate_none.safetensors"); }

// The comparison must be able to fail: one weight moved by 1e-3 (the additive score's
// query matrix, local-p's centre vector, the reverse encoder's weights feeding the fixed
// context, the decoder LSTM of luong-dot) no longer matches, in training and, with
// attention, in greedy decoding (the same element of the decoding weights moved: the words
// stay, the attention weights move).
static void test_parity_perturbed_weight_fails(void) {
    static const FixturePerturbation cases[] = {{"translate_bahdanau.safetensors", "attn.W_q", 2},
                                                {"translate_local_p.safetensors", "attn.v_p", 1},
                                                {"translate_none.safetensors", "enc.rev.W", 5},
                                                {"translate_luong_dot.safetensors", "lstm.W", 88}};
    fixture_check_perturbed(&suite, cases, sizeof cases / sizeof *cases);
}

int main(void) {
    RUN(test_parity_bahdanau);
    RUN(test_parity_luong_general);
    RUN(test_parity_luong_dot);
    RUN(test_parity_luong_concat);
    RUN(test_parity_local_m);
    RUN(test_parity_local_p);
    RUN(test_parity_none);
    RUN(test_parity_perturbed_weight_fails);
    return test_summary();
}
