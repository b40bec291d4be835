// sat_finetune.c: see sat_finetune.h.
#include "models/sat_finetune.h"

#include <stdlib.h>
#include <string.h>

#include "core/check.h"
#include "vision/conv_infer.h"

void sat_finetune_init(SatFineTune *ft, const Encoder *enc, int S, int B) {
    CHECK(B >= 1 && encoder_grid_size(enc, S) >= 1, "fine-tuning batch %d of %d px images", B, S);
    memset(ft, 0, sizeof *ft);
    ft->enc = enc, ft->S = S, ft->B = B;
    encoder_last_stage(enc, &ft->stage);
    ft->C = encoder_stage_input_channels(enc), ft->s = encoder_stage_input_side(enc, S);
    ft->G = encoder_grid_size(enc, S), ft->D = encoder_dim(enc);
    encoder_workspace_alloc(&ft->ws, enc, S, 1, B < 4 ? B : 4, ENCODER_CONV_AUTO);  // groups of 4
    const size_t np = ft->stage.n_params, nx = (size_t)B * ft->C * ft->s * ft->s;
    const size_t ny = (size_t)B * ft->G * ft->G * ft->D;
    ft->grad = xcalloc(np, sizeof(float));
    ft->adam_m = xcalloc(np, sizeof(float));
    ft->adam_v = xcalloc(np, sizeof(float));
    ft->feat = xmalloc(nx * sizeof(float));
    ft->x = xmalloc(nx * sizeof(float));
    ft->annot = xmalloc(ny * sizeof(float));
    ft->dy = xmalloc(ny * sizeof(float));
}

void sat_finetune_free(SatFineTune *ft) {
    if (ft->Bb) encoder_stage_work_free(&ft->work);
    encoder_workspace_free(&ft->ws);
    encoder_stage_free(&ft->stage);
    free(ft->grad), free(ft->adam_m), free(ft->adam_v);
    free(ft->feat), free(ft->x), free(ft->annot), free(ft->dy);
    memset(ft, 0, sizeof *ft);
}

const float *sat_finetune_annotations(SatFineTune *ft, const float *images, int Bb) {
    CHECK(Bb >= 1 && Bb <= ft->B, "fine-tuning batch %d (capacity %d)", Bb, ft->B);
    if (Bb != ft->Bb) {  // the stage's activations are laid out for one batch size
        if (ft->Bb) encoder_stage_work_free(&ft->work);
        encoder_stage_work_alloc(&ft->work, &ft->stage, Bb, ft->s);
        ft->Bb = Bb;
    }
    encoder_forward_prefix(ft->enc, &ft->ws, ft->feat, images, Bb);
    nchw_to_cnhw(ft->x, ft->feat, Bb, ft->C, ft->s * ft->s);
    encoder_stage_forward(&ft->stage, &ft->work, ft->x);
    cnhw_to_annotations(ft->annot, encoder_stage_output(&ft->stage, &ft->work), Bb, ft->D,
                        ft->G * ft->G);
    return ft->annot;
}

void sat_finetune_backward(SatFineTune *ft, const SatModel *m) {
    CHECK(m->annot_grad && m->Bb == ft->Bb && sat_L(&m->cfg) == ft->G * ft->G &&
              sat_D(&m->cfg) == ft->D,
          "fine-tuning: the model's last batch is not the stage's (annot_grad %d, batch %d/%d)",
          m->annot_grad, m->Bb, ft->Bb);
    // dannot (B, L, D) -> dy (D, B, L): the stage's channel-major output layout.
    const int B = ft->Bb, L = ft->G * ft->G, D = ft->D;
    const float *da = sat_annotation_grads(m);
    for (int b = 0; b < B; b++)
        for (int l = 0; l < L; l++)
            for (int d = 0; d < D; d++)
                ft->dy[((size_t)d * B + b) * L + l] = da[((size_t)b * L + l) * D + d];
    encoder_stage_backward(&ft->stage, &ft->work, ft->grad, NULL, ft->x, ft->dy);
}

float sat_finetune_step(SatFineTune *ft, const AdamConfig *adam, long step, float lr, float clip) {
    const size_t n = ft->stage.n_params;
    const float norm = clip_global_norm(ft->grad, n, clip);
    adam_update(ft->stage.params, ft->grad, ft->adam_m, ft->adam_v, n, adam, step, lr);
    memset(ft->grad, 0, n * sizeof(float));
    return norm;
}
