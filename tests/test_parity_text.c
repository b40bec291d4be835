// test_parity_text.c: models/textclass (the sentence classifier) against the PyTorch reference
// (bench/reference/textclass_ref.py, `make fixtures`).
//
// Each fixture in $ATTEND_FIXTURES (default tests/fixtures) holds a tiny configuration's
// weights (param/NAME, the Block's names), word ids, lengths and labels, and what PyTorch
// computed in float64 from those float32 values: the LSTM states (torch's own LSTM kernel
// with the toolkit's weights split into weight_ih / weight_hh, or, masked, a loop of its
// cells), the pooling's weights alpha, the pooled vector, the logits, the probabilities, the
// loss with the embedding's L2 penalty and every parameter's gradient. Between them the ten
// fixtures cover every pooling (keras with its per-step bias, final-dot, a learned query
// with the additive kernel, last, mean), masked and not, one direction and both, sigmoid
// and softmax, and sentences of T words, fewer, one and none. No dropout there (the model
// draws its masks inside text_forward); four more fixtures take the LSTM alone
// (seq/lstm_seq.h) with fixed variational dropout masks on x_t and h_{t-1}, one forward in
// time without lengths, one backward in time with lengths 5, 2, 1, 0: two with the masks
// shared by the gates (lstm_seq_forward) through torch's own cell (torch.lstm_cell), two
// with one mask per gate (lstm_seq_forward_gated, what training runs: in_mask (B, 4, E),
// rec_mask (B, 4, H)) through the reference's loop of gates (itself checked against
// torch.lstm_cell with equal masks): hs and the gradients of sum(hs * R) for x, W and b.
// The C model runs in float32.
//
// Tolerances, |C - reference| <= atol + rtol |reference| element by element:
//   forward (states, alpha, pooled, logits, probs, loss)   rtol 1e-5, atol 1e-6
//   gradients                                              rtol 1e-4, atol 1e-6 * the
//                                                          largest reference gradient of
//                                                          the model
// The gradients' atol is the model's, not each tensor's (tests/test_parity_draw.c's): with
// a learned query every step's score moves by the same W_q q + b, which the softmax mostly
// cancels, so attn.W_q's, attn.b's and query's gradients are sums of terms of the LSTM
// gradients' size that cancel to 100-1000x less; their float32 error is that of the terms
// (1e-9 here, as every tensor's), not of the small result. A wrong gradient still shows: an
// atol of about 1e-8 against gradients of 1e-6 and more.
// Seen when written (PARITY_VERBOSE=1): at most 0.04 of these tolerances (grad/lstm.W of text_last_masked_bi).
// A mismatch fails naming the fixture, the tensor, the worst element and both values. Two
// tests perturb one weight by 1e-3 (of the model; of the gated LSTM) and check the
// comparison then fails.
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/block.h"
#include "core/safetensors.h"
#include "models/textclass.h"
#include "seq/lstm_seq.h"
#include "tests/support/fixture.h"
#include "tests/support/test.h"

#define FWD_RTOL 1e-5
#define FWD_ATOL 1e-6
#define GRAD_RTOL 1e-4
#define GRAD_ATOL_REL 1e-6

typedef struct {
    SafetensorsFile f;
    char path[512];
    TextConfig c;
    int B;
    Block params, grads;
    TextParams p, g;
    int *ids, *lengths, *labels;
} Fx;

static int meta_string(const SafetensorsFile *f, const char *key, char *out, size_t cap) {
    const char *v = safetensors_meta(f, key);
    EXPECT(v != NULL, "fixture has no metadata %s", key);
    if (!v) return -1;
    snprintf(out, cap, "%s", v);
    return 0;
}

// Loads fixture name: configuration, parameters, inputs. 0, or -1 after a failure.
static int fx_load(void *p, const char *name) {
    Fx *x = p;
    memset(x, 0, sizeof *x);
    if (fixture_load(&x->f, x->path, sizeof x->path, name)) return -1;
    TextConfig c = text_config_default(2);
    char pool[32], kind[32];
    double l2;
    if (fixture_meta_int(&x->f, "vocab", &c.vocab) || fixture_meta_int(&x->f, "T", &c.T) ||
        fixture_meta_int(&x->f, "embed", &c.embed) || fixture_meta_int(&x->f, "hidden", &c.hidden) ||
        fixture_meta_int(&x->f, "bidirectional", &c.bidirectional) ||
        fixture_meta_int(&x->f, "attn_size", &c.attn_size) ||
        fixture_meta_int(&x->f, "masked", &c.masked) ||
        fixture_meta_int(&x->f, "classes", &c.classes) || fixture_meta_int(&x->f, "B", &x->B) ||
        fixture_meta_double(&x->f, "embed_l2", &l2) ||
        meta_string(&x->f, "pool", pool, sizeof pool) ||
        meta_string(&x->f, "attn_kind", kind, sizeof kind))
        return -1;
    c.embed_l2 = (float)l2;
    c.dropout = c.rec_dropout = 0.0f;
    EXPECT(text_pool_parse(pool, &c.pool) == 0, "%s: pooling %s", x->path, pool);
    EXPECT(attn_kind_parse(kind, &c.attn_kind) == 0, "%s: kernel %s", x->path, kind);
    Error err = {{0}};
    EXPECT(text_config_check(&c, &err) == 0, "%s: %s", x->path, err.msg);
    x->c = c;
    text_layout(&x->params, &x->p, &c);
    text_layout(&x->grads, &x->g, &c);
    block_alloc(&x->params);
    block_alloc(&x->grads);
    size_t B = (size_t)x->B;
    x->ids = fixture_int_tensor(&x->f, "input/ids", B * c.T);
    x->lengths = fixture_int_tensor(&x->f, "input/lengths", B);
    x->labels = fixture_int_tensor(&x->f, "input/labels", B);
    if (!fixture_read_params(&x->params, &x->f, x->path) || !x->ids || !x->lengths || !x->labels)
        return -1;
    return 0;
}

static void fx_free(void *p) {
    Fx *x = p;
    block_free(&x->params);
    block_free(&x->grads);
    free(x->ids), free(x->lengths), free(x->labels);
    safetensors_free(&x->f);
}

// Runs forward and backward on the fixture's batch and compares; report 0 only answers
// (1: everything within tolerance).
static int compare(void *p, int report) {
    Fx *x = p;
    const TextConfig *c = &x->c;
    const int B = x->B, T = c->T, D = text_state_size(c), O = text_outputs(c);
    TextActs a;
    text_acts_alloc(&a, c, B);
    float loss = (float)text_forward(&a, &x->p, c, x->ids, x->lengths, x->labels, B, NULL, NULL);
    block_zero(&x->grads);
    text_backward(&x->g, &a, &x->p, c, x->ids, x->labels, B);
    const char *w = x->path;
    int ok = 1;
    const float *want = fixture_tensor(&x->f, "output/states", (size_t)B * T * D);
    ok &= want && fixture_compare_report(w, "states", a.states, want, (size_t)B * T * D, FWD_ATOL, FWD_RTOL, report);
    if (safetensors_find(&x->f, "output/alpha")) {
        want = fixture_tensor(&x->f, "output/alpha", (size_t)B * T);
        ok &= want && fixture_compare_report(w, "alpha", a.alpha, want, (size_t)B * T, FWD_ATOL, FWD_RTOL, report);
    }
    want = fixture_tensor(&x->f, "output/pooled", (size_t)B * D);
    ok &= want && fixture_compare_report(w, "pooled", a.pooled, want, (size_t)B * D, FWD_ATOL, FWD_RTOL, report);
    want = fixture_tensor(&x->f, "output/logits", (size_t)B * O);
    ok &= want && fixture_compare_report(w, "logits", a.logits, want, (size_t)B * O, FWD_ATOL, FWD_RTOL, report);
    want = fixture_tensor(&x->f, "output/probs", (size_t)B * O);
    ok &= want && fixture_compare_report(w, "probs", a.probs, want, (size_t)B * O, FWD_ATOL, FWD_RTOL, report);
    want = fixture_tensor(&x->f, "output/loss", 1);
    ok &= want && fixture_compare_report(w, "loss", &loss, want, 1, FWD_ATOL, FWD_RTOL, report);
    // The gradients' atol scales with the largest reference gradient of the whole model.
    ok &= fixture_compare_grads_model(w, &x->grads, &x->f, GRAD_ATOL_REL, GRAD_RTOL, report);
    text_acts_free(&a);
    return ok;
}

static Block *fx_params(void *p) { return &((Fx *)p)->params; }

static const FixtureSuite suite = {sizeof(Fx), fx_load, fx_free, fx_params, compare, NULL, NULL};

static void check_fixture(const char *name) { fixture_check(&suite, name); }

static void test_parity_keras_demo(void) { check_fixture("text_keras_demo.safetensors"); }
static void test_parity_keras_masked_bi(void) { check_fixture("text_keras_masked_bi.safetensors"); }
static void test_parity_final_dot(void) { check_fixture("text_final_dot.safetensors"); }
static void test_parity_final_dot_masked(void) { check_fixture("text_final_dot_masked.safetensors"); }
static void test_parity_query_additive(void) { check_fixture("text_query_additive.safetensors"); }
static void test_parity_query_unmasked_bi(void) { check_fixture("text_query_unmasked_bi.safetensors"); }
static void test_parity_last(void) { check_fixture("text_last.safetensors"); }
static void test_parity_last_masked_bi(void) { check_fixture("text_last_masked_bi.safetensors"); }
static void test_parity_mean(void) { check_fixture("text_mean.safetensors"); }
static void test_parity_mean_masked(void) { check_fixture("text_mean_masked.safetensors"); }

// seq/lstm_seq.h with fixed variational dropout masks (and lengths, backward in time)
// against PyTorch: hs, and the gradients of sum(hs * R) for x, W and b. Metadata gated 1:
// one mask per gate (lstm_seq_forward_gated; in_mask (B, 4, E), rec_mask (B, 4, H)) against
// the reference's gate loop; else the shared masks (lstm_seq_forward) against torch's cell.
// perturb >= 0 adds 1e-3 to W[perturb] first; report 0 only answers (1: all within
// tolerance, -1: the fixture could not be read).
static int lstm_fixture_compare(const char *name, int perturb, int report) {
    char path[512];
    SafetensorsFile f;
    if (fixture_load(&f, path, sizeof path, name)) return -1;
    int T = 0, B = 0, E = 0, H = 0, rev = 0, gated = 0;
    if (fixture_meta_int(&f, "T", &T) || fixture_meta_int(&f, "B", &B) ||
        fixture_meta_int(&f, "E", &E) || fixture_meta_int(&f, "H", &H) ||
        fixture_meta_int(&f, "reverse", &rev)) {
        safetensors_free(&f);
        return -1;
    }
    if (safetensors_meta(&f, "gated") && fixture_meta_int(&f, "gated", &gated)) gated = 0;
    const size_t K = (size_t)E + H, G = 4 * (size_t)H, TB = (size_t)T * B, nq = gated ? 4 : 1;
    const float *x = fixture_tensor(&f, "input/x", TB * E), *Wf = fixture_tensor(&f, "input/W", G * K);
    const float *b = fixture_tensor(&f, "input/b", G);
    const float *im = fixture_tensor(&f, "input/in_mask", (size_t)B * nq * E);
    const float *rm = fixture_tensor(&f, "input/rec_mask", (size_t)B * nq * H);
    const float *R = fixture_tensor(&f, "input/dhs", TB * H);
    const float *hs_want = fixture_tensor(&f, "output/hs", TB * H);
    const float *gx = fixture_tensor(&f, "grad/x", TB * E), *gW = fixture_tensor(&f, "grad/W", G * K);
    const float *gb = fixture_tensor(&f, "grad/b", G);
    int *lengths = safetensors_find(&f, "input/lengths") ? fixture_int_tensor(&f, "input/lengths", (size_t)B) : NULL;
    int ok = -1;
    if (x && Wf && b && im && rm && R && hs_want && gx && gW && gb) {
        float *W = malloc(G * K * sizeof *W);
        memcpy(W, Wf, G * K * sizeof *W);
        if (perturb >= 0) W[perturb] += 1e-3f;
        size_t nc = gated ? lstm_seq_gated_cache_floats(T, B, E, H) : lstm_seq_cache_floats(T, B, E, H);
        size_t ns = gated ? lstm_seq_gated_scratch_floats(T, B, E, H) : lstm_seq_scratch_floats(B, E, H);
        float *hs = calloc(TB * H, sizeof *hs), *cache = calloc(nc, sizeof *cache);
        float *scratch = calloc(ns, sizeof *scratch);
        float *dx = calloc(TB * E, sizeof *dx), *dW = calloc(G * K, sizeof *dW), *db = calloc(G, sizeof *db);
        if (gated) {
            lstm_seq_forward_gated(hs, cache, x, W, b, lengths, im, rm, rev, LSTM_GATE_SIGMOID, T,
                                   B, E, H);
            lstm_seq_backward_gated(dx, dW, db, R, cache, W, lengths, im, rm, rev, LSTM_GATE_SIGMOID,
                                    scratch, T, B, E, H);
        } else {
            lstm_seq_forward(hs, cache, x, W, b, lengths, im, rm, rev, T, B, E, H);
            lstm_seq_backward(dx, dW, db, R, cache, W, lengths, im, rm, rev, scratch, T, B, E, H);
        }
        ok = fixture_compare_report(path, "hs", hs, hs_want, TB * H, FWD_ATOL, FWD_RTOL, report);
        double mx = 0;
        for (size_t i = 0; i < TB * E; i++) mx = fmax(mx, fabs(gx[i]));
        for (size_t i = 0; i < G * K; i++) mx = fmax(mx, fabs(gW[i]));
        for (size_t i = 0; i < G; i++) mx = fmax(mx, fabs(gb[i]));
        ok &= fixture_compare_report(path, "grad/x", dx, gx, TB * E, GRAD_ATOL_REL * mx, GRAD_RTOL, report);
        ok &= fixture_compare_report(path, "grad/W", dW, gW, G * K, GRAD_ATOL_REL * mx, GRAD_RTOL, report);
        ok &= fixture_compare_report(path, "grad/b", db, gb, G, GRAD_ATOL_REL * mx, GRAD_RTOL, report);
        free(W), free(hs), free(cache), free(scratch), free(dx), free(dW), free(db);
    }
    free(lengths);
    safetensors_free(&f);
    return ok;
}

static void check_lstm_fixture(const char *name) {
    EXPECT(lstm_fixture_compare(name, -1, 1) == 1, "%s differs from PyTorch", name);
}

static void test_parity_lstm_dropout(void) { check_lstm_fixture("text_lstm_dropout.safetensors"); }
static void test_parity_lstm_dropout_rev_masked(void) {
    check_lstm_fixture("text_lstm_dropout_rev_masked.safetensors");
}
static void test_parity_lstm_gated(void) { check_lstm_fixture("text_lstm_gated.safetensors"); }
static void test_parity_lstm_gated_rev_masked(void) {
    check_lstm_fixture("text_lstm_gated_rev_masked.safetensors");
}

// The gated LSTM's comparison must be able to fail too: an input weight of gate f (row
// H + 1, column 2) and a recurrent weight of gate o (row 3H + 2, column E + 1) moved by 1e-3.
static void test_parity_lstm_gated_perturbed_fails(void) {
    static const struct {
        const char *fixture;
        int row, col, E, H;
    } cases[] = {{"text_lstm_gated.safetensors", 5 + 1, 2, 4, 5},
                 {"text_lstm_gated_rev_masked.safetensors", 3 * 4 + 2, 3 + 1, 3, 4}};
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        int at = cases[i].row * (cases[i].E + cases[i].H) + cases[i].col;
        EXPECT(lstm_fixture_compare(cases[i].fixture, -1, 0) == 1, "%s: unperturbed must match",
               cases[i].fixture);
        EXPECT(lstm_fixture_compare(cases[i].fixture, at, 0) == 0,
               "%s: W[%d] + 1e-3 still matches PyTorch", cases[i].fixture, at);
    }
}

// The comparison must be able to fail: one weight of each kind moved by 1e-3 (an LSTM
// recurrent weight of the backward direction, the keras pooling's bias of step 2, the
// embedding of a word) no longer matches.
static void test_parity_perturbed_weight_fails(void) {
    static const FixturePerturbation cases[] = {{"text_keras_masked_bi.safetensors", "lstm_rev.W", 7},
                                                {"text_keras_demo.safetensors", "att.b", 2},
                                                {"text_query_additive.safetensors", "emb", 5}};
    fixture_check_perturbed(&suite, cases, sizeof cases / sizeof *cases);
}

int main(void) {
    RUN(test_parity_keras_demo);
    RUN(test_parity_keras_masked_bi);
    RUN(test_parity_final_dot);
    RUN(test_parity_final_dot_masked);
    RUN(test_parity_query_additive);
    RUN(test_parity_query_unmasked_bi);
    RUN(test_parity_last);
    RUN(test_parity_last_masked_bi);
    RUN(test_parity_mean);
    RUN(test_parity_mean_masked);
    RUN(test_parity_lstm_dropout);
    RUN(test_parity_lstm_dropout_rev_masked);
    RUN(test_parity_lstm_gated);
    RUN(test_parity_lstm_gated_rev_masked);
    RUN(test_parity_lstm_gated_perturbed_fails);
    RUN(test_parity_perturbed_weight_fails);
    return test_summary();
}
