// sat_lstm_decode.c: captions from the LSTM decoder (models/sat_lstm_decode.h).
#include "models/sat_lstm_decode.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/check.h"
#include "core/dims.h"
#include "core/gemm.h"
#include "core/job_threads.h"
#include "models/sat_beam.h"
#include "seq/beam.h"
#include "seq/vocab.h"

// One buffer of a decoding context: where its pointer goes and how many floats it holds.
typedef struct {
    float **dst;
    size_t n;
} DecodeBuffer;

int sat_lstm_check_decode_sizes(const SatConfig *c, int B, int beam, const char *beam_flag,
                                Error *err) {
    const int64_t L = sat_L(c), D = sat_D(c), E = c->E, H = c->H, V = c->V, TS = c->max_len + 1;
    const int64_t prep1 = (int64_t)attn_prep_floats(&c->attn, 1, 1);  // per position
    const int64_t cache1 = (int64_t)attn_step_cache_floats(&c->attn, 1, (int)L);
    char ts[64];
    snprintf(ts, sizeof ts, "steps (--max-len %d + 1)", c->max_len);
    const DimTerm Bt = {B, "--batch"}, Kt = {beam, beam_flag},
                  Lt = {L, "annotation positions (the model's)"}, Dt = {D, "annotation size (the model's)"};
    DimTerm keys[] = {Bt, Lt, Dt};
    DimTerm prep[] = {Bt, Lt, {prep1 ? prep1 : 1, "attention floats per position (the model's --attn-dim)"}};
    DimTerm hist[] = {{TS, ts}, Bt, Kt, Lt};
    DimTerm words[] = {Bt, Kt, {V, "vocabulary words"}};
    DimTerm xh[] = {Bt, Kt, {E + D + H, "LSTM input and state (the model's --embed + annotation size + --hidden)"}};
    DimTerm gates[] = {Bt, Kt, {4 * H, "gate floats (4 x the model's --hidden)"}};
    DimTerm cache[] = {Bt, Kt, {cache1 ? cache1 : 1, "attention floats per row and step"}};
    struct {
        const char *what;
        const DimTerm *t;
        int n;
    } checks[] = {
        {"the images' keys", keys, DIMS_LEN(keys)},
        {"the images' precomputed keys", prep, DIMS_LEN(prep)},
        {"the beam rows' attention history", hist, DIMS_LEN(hist)},
        {"the beam rows' word scores", words, DIMS_LEN(words)},
        {"the beam rows' LSTM inputs", xh, DIMS_LEN(xh)},
        {"the beam rows' LSTM gates", gates, DIMS_LEN(gates)},
        {"the beam rows' attention cache", cache, DIMS_LEN(cache)},
    };
    for (size_t i = 0; i < sizeof checks / sizeof checks[0]; i++)
        if (dims_check(err, checks[i].what, checks[i].t, checks[i].n)) return -1;
    return 0;
}

// The context's float buffers (each 16-float aligned, zeroed) in one allocation, and the
// rows' image indices; *mean gets the (B, D) mean annotations' buffer.
static void decode_buffers_alloc_(SatLstmDecodeCtx *d, const SatConfig *c, int B, int R, float **mean) {
    const int L = sat_L(c), D = sat_D(c), E = c->E, H = c->H, V = c->V, nb = sat_gate_size(c);
    const int I = E + D, TS = c->max_len + 1;
    const size_t prep1 = attn_prep_floats(&c->attn, 1, L);
    CHECK(attn_prep_floats(&c->attn, B, L) == (size_t)B * prep1, "attention prep not per image");
    const size_t cache = attn_step_cache_floats(&c->attn, R, L);
    const DecodeBuffer bufs[] = {
        {&d->annot, (size_t)B * L * D}, {&d->prep, (size_t)B * prep1 + 1},
        {&d->h, (size_t)R * H},         {&d->c, (size_t)R * H},
        {&d->h2, (size_t)R * H},        {&d->c2, (size_t)R * H},
        {&d->ctx, (size_t)R * D},       {&d->alpha, (size_t)R * L},
        {&d->cache, cache + 1},         {&d->beta, (size_t)R * nb},
        {&d->z, (size_t)R * D},         {&d->emb, (size_t)R * E},
        {&d->xin, (size_t)R * I},       {&d->xh, (size_t)R * (I + H)},
        {&d->gates, (size_t)R * 4 * H}, {&d->o, (size_t)R * E},
        {&d->logits, (size_t)R * V},    {&d->alpha_hist, (size_t)TS * R * L},
        {mean, (size_t)B * D},          {&d->hn, (size_t)R * H},
        {&d->cn, (size_t)R * H},        {&d->zp, (size_t)R * D},  // zero: the first step's z_{-1}
        {&d->zp2, (size_t)R * D}};
    const int n = (int)(sizeof bufs / sizeof bufs[0]);
    size_t total = 0;
    for (int i = 0; i < n; i++) total += (bufs[i].n + 15) & ~(size_t)15;
    d->mem = xcalloc(total, sizeof(float));
    float *q = d->mem;
    for (int i = 0; i < n; i++) {
        *bufs[i].dst = q;
        q += (bufs[i].n + 15) & ~(size_t)15;
    }
    d->ints = xcalloc((size_t)2 * R, sizeof(int));
    d->row_image = d->ints;
    d->row_image2 = d->ints + R;
}

// sat_lstm_decode_ctx_init with the CNN's workspace ws (unused with features): the images
// are encoded in chunks of the workspace's batch; the steps multiply by Wt, the LSTM's
// weights packed by decoder_pack_lstm, or with Wt NULL by a pack of the context's own.
static void ctx_init_(SatLstmDecodeCtx *d, SatModel *m, const float *images, int B, int beam,
                      CnnWorkspace *ws, const PackedMatrix *Wt) {
    const SatConfig *c = &m->cfg;
    const int L = sat_L(c), D = sat_D(c), H = c->H;
    memset(d, 0, sizeof *d);
    d->m = m;
    d->B = B;
    d->R = B * beam;
    float *mean;
    decode_buffers_alloc_(d, c, B, d->R, &mean);
    SatLstm *l = sat_lstm(m);
    if (c->feat_L > 0) {
        memcpy(d->annot, images, (size_t)B * sat_input_floats(c) * sizeof(float));
    } else {
        const size_t per = sat_input_floats(c);
        const int chunk = ws->B;
        CHECK(chunk >= 1, "decoding without a CNN workspace");
        for (int b0 = 0; b0 < B; b0 += chunk) {
            int n = B - b0 < chunk ? B - b0 : chunk;
            cnn_forward(d->annot + (size_t)b0 * L * D, ws, images + (size_t)b0 * per,
                        &l->p.cnn, n);
        }
    }
    decoder_mean_annotations(mean, d->annot, NULL, B, L, D);
    // Initial states of the images go in h/c rows 0..B-1 (the first step's parents).
    decoder_initial_state(d->h, d->c, mean, &l->p.dec, B, D, H);
    attn_prepare(d->prep, d->annot, &l->p.dec.attn, &c->attn, B, L);
    for (int b = 0; b < B; b++) d->row_image[b] = b;
    d->step_Wt = Wt;
    if (!Wt) {
        const DecoderConfig dc = sat_decoder_config(c);
        decoder_pack_lstm(&d->lstm_Wt, &l->p.dec, &dc);
        d->step_Wt = &d->lstm_Wt;
    }
}

void sat_lstm_decode_ctx_init(SatLstmDecodeCtx *d, SatModel *m, const float *images, int B,
                              int beam) {
    SatLstm *l = sat_lstm(m);
    CHECK(l->acts_block.data, "sat_alloc_acts before decoding");
    ctx_init_(d, m, images, B, beam, &l->cnn_ws, NULL);
}

void sat_lstm_decode_ctx_free(SatLstmDecodeCtx *d) {
    packed_free(&d->lstm_Wt);
    free(d->mem);
    free(d->ints);
    memset(d, 0, sizeof *d);
}

// Row r of the step's rows continues row parent[r] of the last call's: its LSTM state, its
// image (whose annotations and attention prep it reads in place: attn_forward_shared), and
// (query current) the parent's attention read.
static void gather_parents(SatLstmDecodeCtx *d, int n, const int *parent) {
    const SatConfig *c = &d->m->cfg;
    const int D = sat_D(c), H = c->H;
    const int after = c->query == SAT_QUERY_CURRENT;
    for (int r = 0; r < n; r++) {
        int q = parent[r];
        int img = d->row_image[q];
        d->row_image2[r] = img;
        memcpy(d->h2 + (size_t)r * H, d->h + (size_t)q * H, (size_t)H * sizeof(float));
        memcpy(d->c2 + (size_t)r * H, d->c + (size_t)q * H, (size_t)H * sizeof(float));
        if (after) memcpy(d->zp2 + (size_t)r * D, d->zp + (size_t)q * D, (size_t)D * sizeof(float));
    }
}


void sat_lstm_beam_step(void *vctx, int n, const int *parent, const int *token, float *logprobs) {
    SatLstmDecodeCtx *d = vctx;
    SatModel *m = d->m;
    const SatConfig *c = &m->cfg;
    const int L = sat_L(c), V = c->V;
    CHECK(n >= 1 && n <= d->R, "rows %d, capacity %d", n, d->R);
    CHECK(d->t <= c->max_len, "step %d past the limit", d->t);
    const int after = c->query == SAT_QUERY_CURRENT;
    gather_parents(d, n, parent);
    // The shared decoder's step (models/decoder.h), as sat_forward's: query previous attends
    // with the parents' h, query current with the new state after reading the token and the
    // parents' z.
    const DecoderConfig dc = sat_decoder_config(c);
    const DecoderStep s = {.keys = d->annot, .prep = d->prep, .src = d->row_image2,
                           .n_src = d->B, .lengths = NULL, .h = d->h2,
                           .c = d->c2, .zp = d->zp2, .hn = d->hn, .cn = d->cn, .ctx = d->ctx,
                           .alpha = d->alpha, .cache = d->cache, .beta = d->beta, .z = d->z,
                           .emb = d->emb, .xin = d->xin, .xh = d->xh, .gates = d->gates,
                           .o = d->o, .logits = d->logits, .lstm_Wt = d->step_Wt};
    decoder_step_forward(&s, token, &sat_lstm(m)->p.dec, &dc, d->t, n);
    memcpy(d->alpha_hist + (size_t)d->t * d->R * L, d->alpha, (size_t)n * L * sizeof(float));
    sat_next_word_logprobs(logprobs, d->logits, n, V);
    // The new states become the rows of this call.
    float *t;
    t = d->h; d->h = d->hn; d->hn = t;
    t = d->c; d->c = d->cn; d->cn = t;
    if (after) {
        t = d->zp; d->zp = d->z; d->z = t;
    }
    int *ti = d->row_image; d->row_image = d->row_image2; d->row_image2 = ti;
    d->t++;
}


// One share of a decoding call: images [b0, b0 + B) of the caller's, their outputs in place.
typedef struct {
    SatModel *m;
    int *tokens, *lens;      // (B, max_len), (B)
    float *alphas;           // (B, max_len, L) or NULL
    const float *images;     // (B, sat_input_floats)
    int B, beam;
    float length_alpha;
    CnnWorkspace *ws;        // the CNN's workspace this share encodes with
    const PackedMatrix *Wt;  // the LSTM's packed weights, shared by every share
} DecodeShare;

static void *decode_share_run_(void *arg) {
    const DecodeShare *j = arg;
    const SatConfig *c = &j->m->cfg;
    SatLstmDecodeCtx d;
    ctx_init_(&d, j->m, j->images, j->B, j->beam, j->ws, j->Wt);
    sat_beam_decode(j->tokens, j->lens, j->alphas, j->B, j->beam, j->length_alpha, c->V,
                    c->max_len, sat_L(c), &d, sat_lstm_beam_step, d.alpha_hist, d.R);
    sat_lstm_decode_ctx_free(&d);
    return NULL;
}


void sat_lstm_decode(SatModel *m, int *tokens, int *lens, float *alphas, const float *images,
                     int B, int beam, float length_alpha) {
    const SatConfig *c = &m->cfg;
    CHECK(beam >= 1 && B >= 1, "beam %d B %d", beam, B);
    SatLstm *l = sat_lstm(m);
    CHECK(l->acts_block.data, "sat_alloc_acts before decoding");
    const int threads = gemm_threads();
    int n = threads < B ? threads : B;
    n = n < JOB_THREADS_MAX ? n : JOB_THREADS_MAX;
    const int ML = c->max_len, L = sat_L(c);
    const size_t per = sat_input_floats(c);
    DecodeShare jobs[JOB_THREADS_MAX];
    CnnWorkspace ws[JOB_THREADS_MAX];
    PackedMatrix Wt;
    const DecoderConfig dc = sat_decoder_config(c);
    decoder_pack_lstm(&Wt, &l->p.dec, &dc);
    for (int k = 0; k < n; k++) {
        const int b0 = (int)((int64_t)B * k / n), b1 = (int)((int64_t)B * (k + 1) / n);
        jobs[k] = (DecodeShare){.m = m, .tokens = tokens + (size_t)b0 * ML, .lens = lens + b0,
                                .alphas = alphas ? alphas + (size_t)b0 * ML * L : NULL,
                                .images = images + (size_t)b0 * per, .B = b1 - b0, .beam = beam,
                                .length_alpha = length_alpha, .ws = &l->cnn_ws, .Wt = &Wt};
        // Share 0 encodes with the model's workspace, the others with one of their own (the
        // CNN's result for an image does not depend on the workspace's batch).
        if (k > 0 && c->feat_L == 0) {
            const int cap = jobs[k].B < l->cnn_ws.B ? jobs[k].B : l->cnn_ws.B;
            cnn_workspace_alloc(&ws[k], &c->cnn, cap, c->image_size);
            jobs[k].ws = &ws[k];
        }
    }
    if (n <= 1) {
        decode_share_run_(&jobs[0]);
        packed_free(&Wt);
        return;
    }
    // Each share on a thread of its own, each running single-threaded products (the kernels
    // of one thread, core/gemm.h): an image's search reads no other image's rows, so only
    // the last bits can differ from one thread's (OpenBLAS's result for a row can depend on
    // how many rows its product has, and a share has fewer; a near tie may then pick other
    // words), and they are the same on every run with the same thread count and batch.
    gemm_set_threads(1);
    job_threads_run(decode_share_run_, jobs, sizeof jobs[0], n);
    for (int k = 1; k < n && c->feat_L == 0; k++) cnn_workspace_free(&ws[k]);
    gemm_set_threads(threads);
    packed_free(&Wt);
}
