// transformer_decode.c: see transformer_decode.h. Each sub-layer is the evaluation form of
// transformer.c's residual: f(LN(x)) + x (pre-LN) or LN(x + f(x)) (post-LN), on B rows.
#include "seq/transformer_decode.h"

#include <stdio.h>
#include <string.h>

#include "core/check.h"
#include "core/dims.h"
#include "seq/layernorm.h"

static void add(Block *a, float **view, const char *prefix, const char *name, int l, int d0,
                int d1) {
    char full[BLOCK_NAME_LEN];
    int n = l >= 0 ? snprintf(full, sizeof full, "%s.%s%d", prefix, name, l)
                   : snprintf(full, sizeof full, "%s.%s", prefix, name);
    CHECK(n > 0 && n < (int)sizeof full, "tensor name too long: %s.%s", prefix, name);
    if (d1 > 0) block_add(a, view, full, 2, d0, d1);
    else block_add(a, view, full, 1, d0);
}

void tf_decode_layout(Block *a, TfDecodeState *s, const TransformerConfig *c, int B, int cap,
                      int S, const char *prefix) {
    CHECK(transformer_config_check(c, NULL) == 0 && B >= 1 && cap >= 1 && S >= 1,
          "tf_decode_layout B %d cap %d S %d", B, cap, S);
    CHECK((int64_t)B * (cap > S ? cap : S) * (c->d_model > c->d_ff ? c->d_model : c->d_ff) <=
              DIMS_MAX,
          "decode state B %d cap %d S %d passes DIMS_MAX: check transformer_check_sizes first", B,
          cap, S);
    memset(s, 0, sizeof *s);
    s->B = B, s->cap = cap, s->S = S;
    int d = c->d_model;
    for (int l = 0; l < c->layers; l++) {
        add(a, &s->self_k[l], prefix, "self_k", l, B * cap, d);
        add(a, &s->self_v[l], prefix, "self_v", l, B * cap, d);
        add(a, &s->mem_k[l], prefix, "mem_k", l, B * S, d);
        add(a, &s->mem_v[l], prefix, "mem_v", l, B * S, d);
        add(a, &s->cross_weights[l], prefix, "cross_weights", l, B, S);
    }
    add(a, &s->h[0], prefix, "h0", -1, B, d);
    add(a, &s->h[1], prefix, "h1", -1, B, d);
    add(a, &s->normed, prefix, "normed", -1, B, d);
    add(a, &s->fout, prefix, "fout", -1, B, d);
    add(a, &s->sum, prefix, "sum", -1, B, d);
    add(a, &s->mean, prefix, "mean", -1, B, 0);
    add(a, &s->rstd, prefix, "rstd", -1, B, 0);
    add(a, &s->ffn_pre, prefix, "ffn_pre", -1, B, c->d_ff);
    add(a, &s->ffn_hidden, prefix, "ffn_hidden", -1, B, c->d_ff);
    MhaConfig m = {.d = d, .heads = c->heads};
    add(a, &s->mha_scratch, prefix, "mha_scratch", -1,
        (int)mha_step_scratch_floats(&m, B, cap > S ? cap : S), 0);
    add(a, &s->gather, prefix, "gather", -1, B * (cap > S ? cap : S), d);
}

void tf_decode_start(TfDecodeState *s, const float *mem, int n, const TfDecoderParams *p,
                     const TransformerConfig *c) {
    CHECK(n >= 1 && n <= s->B, "decode start of %d rows in a state of %d", n, s->B);
    MhaConfig m = {.d = c->d_model, .heads = c->heads};
    for (int l = 0; l < c->layers; l++)
        mha_kv_write(s->mem_k[l], s->mem_v[l], mem, &p->layer[l].cross_attn, &m, n, s->S, 0,
                     s->S);
}

// cache (B rows of stride floats): row r of [0, n) = row parent[r]'s first len floats. A row
// that keeps its own (parent[r] == r, most rows of a beam's step) is neither read into buf
// nor written back: every other row reads the cache before any is overwritten.
static void gather_rows(float *cache, float *buf, int n, const int *parent, size_t stride,
                        size_t len, int B) {
    for (int r = 0; r < n; r++) {
        CHECK(parent[r] >= 0 && parent[r] < B, "gather: parent %d of row %d", parent[r], r);
        if (parent[r] != r)
            memcpy(buf + (size_t)r * len, cache + (size_t)parent[r] * stride, len * sizeof(float));
    }
    for (int r = 0; r < n; r++)
        if (parent[r] != r)
            memcpy(cache + (size_t)r * stride, buf + (size_t)r * len, len * sizeof(float));
}

void tf_decode_gather(TfDecodeState *s, int n, const int *parent, int t,
                      const TransformerConfig *c) {
    tf_decode_gather_split(s, n, parent, parent, t, c);
}

void tf_decode_gather_split(TfDecodeState *s, int n, const int *parent, const int *mem_parent,
                            int t, const TransformerConfig *c) {
    CHECK(n >= 1 && n <= s->B && t >= 0 && t <= s->cap, "gather n %d t %d", n, t);
    size_t d = (size_t)c->d_model, self = (size_t)s->cap * d, mem = (size_t)s->S * d;
    for (int l = 0; l < c->layers; l++) {
        if (t > 0) {
            gather_rows(s->self_k[l], s->gather, n, parent, self, (size_t)t * d, s->B);
            gather_rows(s->self_v[l], s->gather, n, parent, self, (size_t)t * d, s->B);
        }
        gather_rows(s->mem_k[l], s->gather, n, mem_parent, mem, mem, s->B);
        gather_rows(s->mem_v[l], s->gather, n, mem_parent, mem, mem, s->B);
    }
}

// The sub-layer's input: LN(x) into s->normed (pre-LN), or x.
static const float *step_input(TfDecodeState *s, const float *x, const LayerNormParams *ln,
                               const TransformerConfig *c, int n) {
    if (c->post_ln) return x;
    layernorm_forward(s->normed, s->mean, s->rstd, x, ln->weight, ln->bias, c->ln_eps, n,
                      c->d_model);
    return s->normed;
}

// out = x + s->fout (pre-LN) or LN(x + s->fout) (post-LN). out may not alias x.
static void step_output(float *out, TfDecodeState *s, const float *x, const LayerNormParams *ln,
                        const TransformerConfig *c, int n) {
    size_t nd = (size_t)n * c->d_model;
    float *dst = c->post_ln ? s->sum : out;
    for (size_t i = 0; i < nd; i++) dst[i] = x[i] + s->fout[i];
    if (c->post_ln)
        layernorm_forward(out, s->mean, s->rstd, s->sum, ln->weight, ln->bias, c->ln_eps, n,
                          c->d_model);
}

// Layer l at step t on rows [0, n): from x (n, d) into out (n, d); tmp (n, d) holds the
// middle states.
static void step_layer(float *out, float *tmp, TfDecodeState *s, const float *x, int n, int l,
                       int t, const int *mem_lengths, const TfDecoderLayerParams *p,
                       const TransformerConfig *c) {
    MhaConfig m = {.d = c->d_model, .heads = c->heads};
    const float *in = step_input(s, x, &p->norm1, c, n);
    mha_kv_write(s->self_k[l], s->self_v[l], in, &p->self_attn, &m, n, 1, t, s->cap);
    mha_step_forward(s->fout, NULL, s->mha_scratch, in, s->self_k[l], s->self_v[l], t + 1, NULL,
                     &p->self_attn, &m, n, s->cap);
    step_output(tmp, s, x, &p->norm1, c, n);
    in = step_input(s, tmp, &p->norm2, c, n);
    MhaConfig mc = {.d = c->d_model, .heads = c->heads, .weights_head = s->cross_head};
    mha_step_forward(s->fout, s->cross_weights[l], s->mha_scratch, in, s->mem_k[l], s->mem_v[l],
                     s->S, mem_lengths, &p->cross_attn, &mc, n, s->S);
    step_output(out, s, tmp, &p->norm2, c, n);
    memcpy(tmp, out, (size_t)n * c->d_model * sizeof(float));
    in = step_input(s, tmp, &p->norm3, c, n);
    ffn_forward(s->fout, s->ffn_pre, s->ffn_hidden, in, &p->ffn, NULL, c->act, n, c->d_model,
                c->d_ff);
    step_output(out, s, tmp, &p->norm3, c, n);
}

void tf_decode_step(float *out, TfDecodeState *s, const float *x_t, int n, int t,
                    const int *mem_lengths, const TfDecoderParams *p, const TransformerConfig *c) {
    CHECK(t >= 0 && t < s->cap, "decode step %d past the cache of %d", t, s->cap);
    CHECK(n >= 1 && n <= s->B, "decode step of %d rows in a state of %d", n, s->B);
    memcpy(s->h[0], x_t, (size_t)n * c->d_model * sizeof(float));
    for (int l = 0; l < c->layers; l++) {
        float *dst = l == c->layers - 1 && !c->final_norm ? out : s->h[0];
        step_layer(dst, s->h[1], s, s->h[0], n, l, t, mem_lengths, &p->layer[l], c);
    }
    if (c->final_norm)
        layernorm_forward(out, s->mean, s->rstd, s->h[0], p->norm.weight, p->norm.bias,
                          c->ln_eps, n, c->d_model);
}
