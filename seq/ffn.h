// ffn.h: the Transformer's position-wise feed-forward layer, on N rows (B T positions) at once:
//     pre = x W1^T + b1 (N, F),  hidden = act(pre) * mask,  out = hidden W2^T + b2 (N, d)
// act: ReLU (the paper's, PyTorch's default) or GELU (the exact one, 0.5 x (1 + erf(x / sqrt 2)),
// PyTorch's activation="gelu"). mask (N, F): inverted-dropout factors (0 or 1 / (1 - rate),
// seq/lstm_seq.h lstm_dropout_mask), or NULL for none (PyTorch's FFN dropout sits there).
// W1 (F, d), b1 (F), W2 (d, F), b2 (d): nn.Linear's layout (linear1, linear2).
#ifndef SEQ_FFN_H
#define SEQ_FFN_H

typedef enum { FFN_RELU, FFN_GELU } FfnActivation;

// "relu", "gelu". 0, or -1 for an unknown name.
int ffn_activation_parse(const char *name, FfnActivation *act);
const char *ffn_activation_name(FfnActivation act);

typedef struct {
    float *W1, *b1, *W2, *b2;  // W1 (F, d), b1 (F), W2 (d, F), b2 (d)
} FfnParams;

// out (N, d); pre (N, F), hidden (N, F) kept for backward; inp (N, d); mask (N, F) or NULL.
void ffn_forward(float *out, float *pre, float *hidden, const float *inp, const FfnParams *p,
                 const float *mask, FfnActivation act, int N, int d, int F);
// Accumulates dinp (N, d) (or not, NULL) and dp from dout (N, d); dhidden (N, F) is scratch.
void ffn_backward(float *dinp, FfnParams *dp, float *dhidden, const float *dout, const float *inp,
                  const float *pre, const float *hidden, const FfnParams *p, const float *mask,
                  FfnActivation act, int N, int d, int F);

#endif
