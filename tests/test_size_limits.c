// test_size_limits.c: a property test of the set-ups' size refusals (issue 56, the
// integer-overflow class). Random configurations, each flag within its own range (the
// ranges bin/caption accepts), go through the set-up's checks (sat_config_finish, then
// sat_check_sizes at the batch); whenever it accepts, every tensor the model would allocate
// (the parameter and activation layouts themselves, sat_lstm_params_layout /
// sat_lstm_acts_layout, not a copy of their sizes) and every int-indexed CNN buffer holds at most DIMS_MAX floats,
// computed again here in 128-bit arithmetic from the shapes. Whenever the decoder's part
// refuses, some tensor of the layout does pass DIMS_MAX (no refusal without a cause). Run it
// under the sanitizer build too (build-san): nothing is allocated, so the large
// configurations cost nothing. The same property for DRAW and the glimpse classifier, and
// from caption train's command line itself (its flag table's ranges).
#include <string.h>

#include "cli/caption_train_flags.h"
#include "core/block.h"
#include "core/dims.h"
#include "core/rng.h"
#include "models/draw.h"
#include "models/glimpse.h"
#include "models/sat.h"
#include "models/sat_decode.h"
#include "models/sat_lstm.h"
#include "seq/vocab.h"
#include "tests/support/test.h"

typedef unsigned __int128 u128;

// Uniform in [lo, hi] on a log scale (the large sides as often as the small ones).
static int log_uniform(Rng *rng, int lo, int hi) {
    double l = log((double)lo), h = log((double)hi + 1.0);
    int v = (int)exp(l + (h - l) * (double)rng_uniform(rng));
    return v < lo ? lo : v > hi ? hi : v;
}

static int uniform_int(Rng *rng, int lo, int hi) {
    int v = lo + (int)(rng_uniform(rng) * (float)(hi - lo + 1));
    return v > hi ? hi : v;
}

// A configuration within caption train's flag ranges (cli/caption_train_flags.c) and the
// feature caches' (sat_config_finish); *B the batch (--batch 1..4096).
static void random_config(SatConfig *c, int *B, Rng *rng) {
    sat_config_default(c);
    static const AttnKind kinds[] = {ATTN_NONE, ATTN_ADDITIVE, ATTN_DOT, ATTN_SCALED_DOT,
                                     ATTN_MULTIPLICATIVE, ATTN_MULTIHEAD, ATTN_LOCAL_MONOTONIC,
                                     ATTN_LOCAL_PREDICTIVE};
    c->attn.kind = kinds[uniform_int(rng, 0, 7)];
    c->hard = c->attn.kind == ATTN_ADDITIVE && rng_uniform(rng) < 0.3f;
    c->image_size = log_uniform(rng, 8, 1024);
    c->cnn.n_layers = uniform_int(rng, 1, 4);
    for (int i = 0; i < c->cnn.n_layers; i++) c->cnn.channels[i] = log_uniform(rng, 1, 4096);
    if (rng_uniform(rng) < 0.25f) {
        c->feat_L = log_uniform(rng, 1, 65536);
        c->feat_D = log_uniform(rng, 1, 65536);
    }
    c->E = log_uniform(rng, 1, 8192);
    c->H = log_uniform(rng, 1, 8192);
    if (c->attn.kind == ATTN_DOT || c->attn.kind == ATTN_SCALED_DOT) c->H = sat_D(c);
    c->attn.A = log_uniform(rng, 1, 8192);
    c->attn.heads = log_uniform(rng, 1, 64);
    if (c->attn.kind == ATTN_MULTIHEAD) c->attn.A = c->attn.heads * log_uniform(rng, 1, 8192 / c->attn.heads);
    c->attn.window = log_uniform(rng, 1, 1025) - 1;
    c->max_len = log_uniform(rng, 1, 256);
    c->V = log_uniform(rng, VOCAB_NSPECIAL + 1, 200000);
    c->beta_vector = rng_uniform(rng) < 0.5f;
    c->dropout = rng_uniform(rng) < 0.5f ? 0.5f : 0.0f;
    *B = log_uniform(rng, 1, 4096);
}

// The largest tensor of a layout (128-bit product of its shape, which must equal numel).
static u128 largest_tensor(const Block *b, const char **name) {
    u128 most = 0;
    for (int i = 0; i < b->count; i++) {
        const BlockTensor *t = &b->tensors[i];
        u128 n = 1;
        for (int d = 0; d < t->ndim; d++) n *= (u128)t->shape[d];
        EXPECT(n == (u128)t->numel, "%s: numel %zu is not its shape's product", t->name, t->numel);
        if (n > most) most = n, *name = t->name;
    }
    return most;
}

// The trials of a property test so far.
typedef struct {
    int accepted, refused;
} Verdicts;

// One trial's answer: its set-up's check gave ok (err: the refusal) on a configuration whose
// layouts are params and acts (freed here). Accepted, every tensor of both holds at most
// DIMS_MAX floats; refused, the message is one line saying what exceeds 2147483647 and there
// is a cause: a tensor past DIMS_MAX, or other (a refusal of a part without a layout here).
static void judge(Verdicts *v, int trial, int ok, const Error *err, Block *params, Block *acts,
                  int other, int B) {
    const char *pn = "", *an = "";
    const u128 pmax = largest_tensor(params, &pn), amax = largest_tensor(acts, &an);
    const u128 lim = (u128)DIMS_MAX;
    if (ok) {
        v->accepted++;
        EXPECT(pmax <= lim, "trial %d: accepted, parameter %s has %.3g floats", trial, pn, (double)pmax);
        EXPECT(amax <= lim, "trial %d: accepted, activation %s has %.3g floats (B %d)", trial, an,
               (double)amax, B);
    } else {
        v->refused++;
        EXPECT(strchr(err->msg, '\n') == NULL && strstr(err->msg, "exceeds 2147483647"),
               "trial %d: refusal message: %s", trial, err->msg);
        EXPECT(other || pmax > lim || amax > lim, "trial %d: refused without a tensor past 2^31: %s",
               trial, err->msg);
    }
    block_free(params);
    block_free(acts);
}

// The CNN workspace's int-indexed buffers, as vision/cnn.c lays them out for groups of
// CNN_GROUP images: per layer, the convolution's output and the column matrix (im2col) or
// Winograd's M and V (16 planes of rows x group tiles, each plus a 16-float gap).
static u128 largest_cnn_buffer(const SatConfig *c) {
    u128 most = 0;
    const u128 G = CNN_GROUP;
    for (int i = 0; i < c->cnn.n_layers; i++) {
        const int s = c->image_size >> i;
        const u128 C = (u128)(i ? c->cnn.channels[i - 1] : c->cnn.in_channels), OC = (u128)c->cnn.channels[i];
        const int wino = s % 2 == 0 && C >= CNN_WINOGRAD_MIN_CHANNELS;
        const u128 nt = G * (u128)(s / 2) * (u128)(s / 2);
        u128 pre = wino ? 16 * (OC * nt + 16) : G * OC * (u128)s * (u128)s;
        u128 col = wino ? 16 * (C * nt + 16) : G * C * 9 * (u128)s * (u128)s;
        if (pre > most) most = pre;
        if (col > most) most = col;
    }
    return most;
}

static void test_accepted_sizes_fit(void) {
    Rng rng;
    rng_seed(&rng, 56);
    int valid = 0;
    Verdicts v = {0, 0};
    for (int trial = 0; trial < 20000; trial++) {
        SatConfig c;
        int B;
        random_config(&c, &B, &rng);
        Error err = {{0}};
        if (sat_config_finish(&c, &err)) continue;  // not a model (e.g. too many poolings)
        valid++;
        const int ok = sat_check_sizes(&c, B, &err) == 0;
        Block params = {0}, acts = {0};
        SatLstmParams p;
        DecoderActs a;
        memset(&a, 0, sizeof a);
        sat_lstm_params_layout(&params, &p, &c);
        sat_lstm_acts_layout(&acts, &a, &c, B);
        const u128 cmax = c.feat_L > 0 ? 0 : largest_cnn_buffer(&c);
        EXPECT(!ok || cmax <= (u128)DIMS_MAX, "trial %d: accepted, a CNN buffer has %.3g floats",
               trial, (double)cmax);
        const int cnn_refused = !ok && c.feat_L == 0 &&
                                cnn_check_sizes(&c.cnn, c.image_size, CNN_GROUP, "--image-size", NULL);
        judge(&v, trial, ok, &err, &params, &acts, cnn_refused, B);
    }
    // The random sets reach both sides of the limit.
    EXPECT(v.accepted > 1000 && v.refused > 1000, "%d valid, %d accepted, %d refused", valid,
           v.accepted, v.refused);
}

// The issue's configuration: the keys tensor is B L A floats by shape (it was one float
// once the int wrapped), and the set-up refuses it; one position fewer fits.
static void test_issue_configuration(void) {
    SatConfig c;
    sat_config_default(&c);
    c.image_size = 1024;
    c.cnn.n_layers = 1;
    c.cnn.channels[0] = 8;
    c.attn.A = 8192;
    c.E = c.H = 8;
    c.V = 100;
    Error err = {{0}};
    EXPECT(sat_config_finish(&c, &err) == 0, "%s", err.msg);
    EXPECT(sat_check_sizes(&c, 1, &err) == -1 && strstr(err.msg, "--attn-dim 8192"), "%s", err.msg);
    Block acts = {0};
    DecoderActs a;
    sat_lstm_acts_layout(&acts, &a, &c, 1);
    const BlockTensor *t = block_find(&acts, "prep");
    EXPECT(t && t->numel == (size_t)1 << 31, "prep holds %zu floats", t ? t->numel : 0);
    block_free(&acts);
    c.attn.A = 8191;
    EXPECT(sat_check_sizes(&c, 1, &err) == 0, "%s", err.msg);
}

// DRAW: a configuration within draw train's flags (--T 1..1000, --read and --write 1..64,
// --hidden and --z 1..8192, --batch 1..10000) on images of any size draw_config_check
// takes (1..4096 a side, 1..DRAW_MAX_CHANNELS channels, from the data's header).
static void random_draw_config(DrawConfig *c, int *B, Rng *rng) {
    memset(c, 0, sizeof *c);
    c->W = log_uniform(rng, 1, 4096);
    c->H = rng_uniform(rng) < 0.5f ? c->W : log_uniform(rng, 1, 4096);
    c->channels = uniform_int(rng, 0, DRAW_MAX_CHANNELS);
    c->T = log_uniform(rng, 1, 1000);
    c->read_n = log_uniform(rng, 1, 64);
    c->write_n = log_uniform(rng, 1, 64);
    c->enc = c->dec = log_uniform(rng, 1, 8192);
    c->z = log_uniform(rng, 1, 8192);
    c->attention = rng_uniform(rng) < 0.7f;
    c->peepholes = rng_uniform(rng) < 0.5f;
    *B = log_uniform(rng, 1, 10000);
}

static void test_draw_accepted_sizes_fit(void) {
    Rng rng;
    rng_seed(&rng, 57);
    Verdicts v = {0, 0};
    for (int trial = 0; trial < 20000; trial++) {
        DrawConfig c;
        int B;
        random_draw_config(&c, &B, &rng);
        Error err = {{0}};
        if (draw_config_check(&c, &err)) continue;
        const int ok = draw_check_sizes(&c, B, &err) == 0;
        Block params = {0}, acts = {0};
        DrawParams p;
        DrawActs a;
        draw_layout(&params, &p, &c);
        draw_acts_layout(&acts, &a, &c, B);
        judge(&v, trial, ok, &err, &params, &acts, 0, B);
    }
    EXPECT(v.accepted > 1000 && v.refused > 1000, "%d accepted, %d refused", v.accepted, v.refused);
}

// The glimpse classifier: draw classify train's flags (--T 1..1000, --read 1..100, --hidden
// 1..8192, --scales 1..8 with --hard, --batch 1..1024) on images of 1..4096 a side
// (glimpse_config_check's range; the cluttered set's is fixed).
static void test_glimpse_accepted_sizes_fit(void) {
    Rng rng;
    rng_seed(&rng, 58);
    Verdicts v = {0, 0};
    for (int trial = 0; trial < 20000; trial++) {
        GlimpseConfig c = glimpse_config_default(log_uniform(&rng, 1, 4096), log_uniform(&rng, 1, 4096));
        c.T = log_uniform(&rng, 1, 1000);
        c.read_n = log_uniform(&rng, 1, 100);
        c.hidden = log_uniform(&rng, 1, 8192);
        c.attention = rng_uniform(&rng) < 0.8f;
        c.hard = c.attention && rng_uniform(&rng) < 0.3f;
        c.loc_std = c.hard ? 0.1f : 0.0f;
        c.scales = c.hard ? uniform_int(&rng, 1, GLIMPSE_MAX_SCALES) : 0;
        const int B = log_uniform(&rng, 1, 1024);
        Error err = {{0}};
        if (glimpse_config_check(&c, &err)) continue;
        const int ok = glimpse_check_sizes(&c, B, &err) == 0;
        Block params = {0}, acts = {0};
        GlimpseParams p;
        GlimpseActs a;
        glimpse_layout(&params, &p, &c);
        glimpse_acts_layout(&acts, &a, &c, B);
        judge(&v, trial, ok, &err, &params, &acts, 0, B);
    }
    EXPECT(v.accepted > 1000 && v.refused > 200, "%d accepted, %d refused", v.accepted, v.refused);
}

// Decoding's rows are images x beam (they read their image's keys in place): the rows'
// attention history (max_len + 1, B beam, L) passes 2^31 at --batch 4096 --beam 64 on 256
// annotation positions with --max-len 40, and fits at half the beam. Greedy decoding of the
// same batch fits; the word scores (B beam, V) pass with a large vocabulary.
static void test_decode_sizes(void) {
    SatConfig c;
    sat_config_default(&c);
    c.V = 1000;
    c.max_len = 40;
    Error err = {{0}};
    EXPECT(sat_config_finish(&c, &err) == 0, "%s", err.msg);
    EXPECT(sat_check_sizes(&c, 4096, &err) == 0, "%s", err.msg);
    EXPECT(sat_check_decode_sizes(&c, 4096, 1, "--beam", &err) == 0, "%s", err.msg);
    EXPECT(sat_check_decode_sizes(&c, 4096, 32, "--beam", &err) == 0, "%s", err.msg);
    c.image_size = 128;  // L = 256
    EXPECT(sat_check_decode_sizes(&c, 4096, 32, "--beam", &err) == 0, "%s", err.msg);
    EXPECT(sat_check_decode_sizes(&c, 4096, 64, "--beam", &err) == -1 &&
               strstr(err.msg, "--batch 4096 x --beam 64 x 256 annotation positions") &&
               strstr(err.msg, "the beam rows' attention history"),
           "%s", err.msg);
    c.image_size = 64;
    c.V = 200000;
    EXPECT(sat_check_decode_sizes(&c, 4096, 3, "--beam", &err) == -1 && strstr(err.msg, "word scores"),
           "%s", err.msg);
}

// The same property from caption train's command line: random flag sets, each value within
// its flag's range, through caption_train_flags_parse and _config (the flags' table decides
// what is in range), then the set-up's checks as caption train runs them (sat_config_finish,
// sat_check_sizes at --batch, sat_check_decode_sizes at --val-beam); whenever they accept,
// every tensor of the layouts fits.
static void test_caption_flag_sets(void) {
    static const char *const kinds[] = {"additive", "dot", "scaled-dot", "multiplicative",
                                        "multi-head", "local-monotonic", "local-predictive",
                                        "hard", "none"};
    Rng rng;
    rng_seed(&rng, 59);
    int parsed = 0, accepted = 0, refused = 0;
    for (int trial = 0; trial < 3000; trial++) {
        char v[16][64], channels[64] = "";
        const int layers = uniform_int(&rng, 1, 4);
        size_t k = 0;
        for (int i = 0; i < layers; i++)
            k += (size_t)snprintf(channels + k, sizeof channels - k, "%s%d", i ? "," : "",
                                  log_uniform(&rng, 1, 4096));
        const char *kind = kinds[uniform_int(&rng, 0, 8)];
        snprintf(v[0], 64, "%d", log_uniform(&rng, 8, 1024));
        snprintf(v[1], 64, "%d", log_uniform(&rng, 1, 8192));
        snprintf(v[2], 64, "%d", log_uniform(&rng, 1, 8192));
        snprintf(v[3], 64, "%d", log_uniform(&rng, 1, 8192));
        snprintf(v[4], 64, "%d", log_uniform(&rng, 1, 64));
        snprintf(v[5], 64, "%d", log_uniform(&rng, 1, 1025) - 1);
        snprintf(v[6], 64, "%d", log_uniform(&rng, 1, 4096));
        snprintf(v[7], 64, "%d", log_uniform(&rng, 1, 256));
        snprintf(v[8], 64, "%d", log_uniform(&rng, 1, 64));
        char *argv[] = {"train", "--out", "unused", "--image-size", v[0], "--channels", channels,
                        "--embed", v[1], "--hidden", v[2], "--attn-dim", v[3], "--heads", v[4],
                        "--window", v[5], "--batch", v[6], "--max-len", v[7], "--val-beam", v[8],
                        "--attention", (char *)kind, NULL};
        const int argc = (int)(sizeof argv / sizeof argv[0]) - 1;
        CaptionTrainFlags f;
        int code = 0;
        EXPECT(caption_train_flags_parse(&f, argc, argv, &code) == 0, "trial %d: flags refused (%d)",
               trial, code);
        SatConfig c;
        Error err = {{0}};
        EXPECT(caption_train_flags_config(&c, &f, &err) == 0, "trial %d: %s", trial, err.msg);
        c.V = log_uniform(&rng, VOCAB_NSPECIAL + 1, 100000);
        if (sat_config_finish(&c, &err)) continue;  // e.g. dot with --hidden not the channels
        parsed++;
        const int B = f.optim.batch;
        const int ok = sat_check_sizes(&c, B, &err) == 0 &&
                       sat_check_decode_sizes(&c, B, f.val_beam, "--val-beam", &err) == 0;
        if (!ok) {
            refused++;
            EXPECT(strstr(err.msg, "exceeds 2147483647") && !strchr(err.msg, '\n'), "trial %d: %s",
                   trial, err.msg);
            continue;
        }
        accepted++;
        Block params = {0}, acts = {0};
        SatLstmParams p;
        DecoderActs a;
        sat_lstm_params_layout(&params, &p, &c);
        sat_lstm_acts_layout(&acts, &a, &c, B);
        const char *pn = "", *an = "";
        const u128 pmax = largest_tensor(&params, &pn), amax = largest_tensor(&acts, &an);
        const u128 cmax = largest_cnn_buffer(&c), lim = (u128)DIMS_MAX;
        // Decoding: the images' keys (B, L, D); the rows' (B x beam) word scores and
        // attention history.
        const u128 R = (u128)B * (u128)f.val_beam, L = (u128)sat_L(&c), D = (u128)sat_D(&c);
        const u128 hist = (u128)(c.max_len + 1) * R * L, words = R * (u128)c.V;
        u128 dmax = (u128)B * L * D;
        if (words > dmax) dmax = words;
        if (hist > dmax) dmax = hist;
        EXPECT(pmax <= lim && amax <= lim && cmax <= lim && dmax <= lim,
               "trial %d: accepted, %s %.3g, %s %.3g floats, CNN %.3g, decoding %.3g", trial, pn,
               (double)pmax, an, (double)amax, (double)cmax, (double)dmax);
        block_free(&params);
        block_free(&acts);
    }
    EXPECT(accepted > 300 && refused > 200, "%d valid, %d accepted, %d refused", parsed, accepted, refused);
}

int main(void) {
    RUN(test_issue_configuration);
    RUN(test_decode_sizes);
    RUN(test_accepted_sizes_fit);
    RUN(test_draw_accepted_sizes_fit);
    RUN(test_glimpse_accepted_sizes_fit);
    RUN(test_caption_flag_sets);
    return test_summary();
}
