// caption_finetune.c: see caption_finetune.h.
#include "cli/caption_finetune.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/train_run.h"
#include "core/check.h"
#include "vision/preprocess.h"

#define STAGE_TENSOR "finetune.stage"
#define ADAM_M_TENSOR "finetune.adam_m"
#define ADAM_V_TENSOR "finetune.adam_v"

void caption_finetune_flags_default(CaptionFineTuneFlags *f) {
    *f = (CaptionFineTuneFlags){.encoder = NULL, .stage = NULL, .lr = SAT_FINETUNE_LR};
}

void caption_finetune_normalize(float *chw, int S) {
    const size_t n = (size_t)S * S;
    for (int c = 0; c < 3; c++)
        for (size_t i = 0; i < n; i++)
            chw[c * n + i] = (chw[c * n + i] - IMAGENET_MEAN[c]) / IMAGENET_STD[c];
}

// The stage name --fine-tune gives against the encoder spec: conv5 for a VGG, layer4 for a
// ResNet cut after layer4.
static int check_stage(const char *stage, const char *arch, Error *err) {
    EncoderSpec spec;
    if (encoder_spec_parse(&spec, arch, err)) return error_prefix(err, "--encoder");
    const bool vgg = spec.arch == ENCODER_VGG16 || spec.arch == ENCODER_VGG19;
    char canon[64];
    encoder_spec_format(canon, sizeof canon, &spec);
    if (strcmp(stage, "conv5") && strcmp(stage, "layer4"))
        return error_set(err, "--fine-tune: expected conv5 (VGG) or layer4 (ResNet), got '%.40s'",
                         stage);
    if (!strcmp(stage, "conv5") && !vgg)
        return error_set(err, "--fine-tune conv5: %s is a ResNet; conv5 is VGG's last stage "
                              "(give --fine-tune layer4)", canon);
    if (!strcmp(stage, "layer4") && vgg)
        return error_set(err, "--fine-tune layer4: %s is a VGG; its last stage is conv5 (give "
                              "--fine-tune conv5)", canon);
    if (!strcmp(stage, "layer4") && spec.cut != 4)
        return error_set(err, "--fine-tune layer4: %s ends at layer3, so it has no layer4 to "
                              "train (cut it after layer4: leave out @layer3)", canon);
    return 0;
}

// Reads tensor name of f (n floats) into dst; one line naming the file otherwise.
static int read_vector(float *dst, size_t n, const SafetensorsFile *f, const char *path,
                       const char *name, Error *err) {
    const SafetensorsTensor *t = safetensors_find(f, name);
    if (!t) return error_set(err, "%s: tensor '%s' missing (the fine-tuned stage)", path, name);
    if (t->numel != n)
        return error_set(err, "%s: tensor '%s' has %zu values, the stage has %zu", path, name,
                         t->numel, n);
    return safetensors_read_floats(dst, f, t, err);  // NaN and inf refused there
}

// --resume: the stage and (state) its Adam moments from path.
static int read_stage_state(SatFineTune *ft, const char *path, Error *err) {
    SafetensorsFile f;
    if (safetensors_open(&f, path, err)) return -1;
    const size_t n = ft->stage.n_params;
    int rc = read_vector(ft->stage.params, n, &f, path, STAGE_TENSOR, err) ||
             read_vector(ft->adam_m, n, &f, path, ADAM_M_TENSOR, err) ||
             read_vector(ft->adam_v, n, &f, path, ADAM_V_TENSOR, err) ? -1 : 0;
    safetensors_free(&f);
    return rc;
}

int caption_finetune_load_stage(Encoder *enc, const char *model_path, Error *err) {
    EncoderStage st;
    encoder_last_stage(enc, &st);
    SafetensorsFile f;
    int rc = safetensors_open(&f, model_path, err);
    if (!rc) {
        rc = read_vector(st.params, st.n_params, &f, model_path, STAGE_TENSOR, err);
        safetensors_free(&f);
    }
    if (!rc) rc = encoder_set_last_stage(enc, &st, err);
    encoder_stage_free(&st);
    return rc;
}

// --resume: --encoder and --fine-tune against what the state records.
static int check_resume(const EncoderRecord *now, const char *saved_path, Error *err) {
    EncoderRecord have;
    if (encoder_record_read(&have, saved_path, err)) return -1;
    if (!have.spec[0] || !have.finetune[0])
        return error_set(err, "%s: the model does not fine-tune an encoder (%s); leave out "
                              "--fine-tune and --encoder", saved_path,
                         have.spec[0] ? "it reads cached features" : "it has its own CNN");
    char a[128], b[128];
    snprintf(a, sizeof a, "%s (weights SHA-256 %.12s...)", now->spec, now->sha256);
    snprintf(b, sizeof b, "%s (weights SHA-256 %.12s...)", have.spec, have.sha256);
    FlagDiffs d = {0};
    flag_diffs_text(&d, "fine-tune", true, now->finetune, have.finetune);
    flag_diffs_text(&d, "encoder", true, a, b);
    flag_diffs_int(&d, "image-size", true, now->image_size, have.image_size);
    flag_diffs_text(&d, "preprocessing", true, now->preprocess, have.preprocess);
    return flag_diffs_refuse(&d, saved_path, err);
}

// Without --fine-tune (and no state that fine-tunes): --encoder is for predict and features.
static int check_not_finetuning(const CaptionFineTuneFlags *fl, Error *err) {
    if (fl->encoder)
        return error_set(err, "--encoder: caption train runs an encoder only with --fine-tune "
                              "(for a frozen one: caption features, then --features)");
    if (fl->lr_given) return error_set(err, "--fine-tune-lr: give --fine-tune too");
    return 0;
}

// --resume of a state that fine-tunes: the flags left out are the ones it records (the
// encoder at the path it was trained with); a --fine-tune-lr given in its place is said,
// as train_optim_resume says the other optimiser flags. encoder (cap 1200) and stage (cap
// 16) hold what fl then points at.
static int resume_defaults(CaptionFineTuneFlags *fl, char *encoder, char *stage,
                           const SatConfig *saved, const char *saved_path, bool quiet,
                           Error *err) {
    if (!saved || saved->feat_L == 0) return 0;
    EncoderRecord have;
    if (encoder_record_read(&have, saved_path, err)) return -1;
    if (!have.finetune[0]) return 0;
    if (!fl->stage) {
        snprintf(stage, 16, "%s", have.finetune);
        fl->stage = stage;
    }
    if (!fl->encoder) {
        snprintf(encoder, 1200, "%s:%s", have.spec, have.weights);
        fl->encoder = encoder;
    }
    if (!have.finetune_lr[0]) return 0;
    const float saved_lr = strtof(have.finetune_lr, NULL);
    FlagDiffs changed = {0};
    flag_diffs_float(&changed, "fine-tune-lr", fl->lr_given, fl->lr, saved_lr);
    if (changed.n && !quiet) fprintf(stderr, "caption train: resuming with %s\n", changed.text);
    if (!fl->lr_given) fl->lr = saved_lr;
    return 0;
}

int caption_finetune_setup_train(CaptionFineTune *t, SatConfig *cfg, EncoderRecord *rec,
                                 const CaptionFineTuneFlags *fl, const char *features, int ranks,
                                 int batch, const SatConfig *saved, const char *saved_path,
                                 bool quiet, Error *err) {
    memset(t, 0, sizeof *t);
    CaptionFineTuneFlags eff = *fl;
    char encoder[1200], stage[16];
    if (resume_defaults(&eff, encoder, stage, saved, saved_path, quiet, err)) return -1;
    if (!eff.stage) return check_not_finetuning(fl, err);
    fl = &eff;
    if (features)
        return error_set(err, "--fine-tune: --features is refused (the cache holds the "
                              "annotations of the stage before fine-tuning: stale once it trains)");
    if (!fl->encoder)
        return error_set(err, "--fine-tune %.20s: give the pretrained encoder, --encoder ARCH:FILE",
                         fl->stage);
    if (ranks > 1)
        return error_set(err, "--fine-tune: one process only for now (%d ranks under mpirun)",
                         ranks);
    char arch[64];
    const char *file = NULL;
    if (caption_encoder_arg_split(arch, &file, fl->encoder, err) ||
        check_stage(fl->stage, arch, err) || encoder_load(&t->enc, arch, file, err))
        return -1;
    const int S = saved ? saved->image_size : cfg->image_size;
    const int G = encoder_grid_size(t->enc, S);
    if (G < 1) return error_set(err, "--image-size: %d is too small for %s", S, arch);
    memset(rec, 0, sizeof *rec);
    encoder_spec_format(rec->spec, sizeof rec->spec, encoder_spec(t->enc));
    snprintf(rec->sha256, sizeof rec->sha256, "%s", encoder_weights_sha256(t->enc));
    snprintf(rec->weights, sizeof rec->weights, "%s", file);
    snprintf(rec->preprocess, sizeof rec->preprocess, "%s", CAPTION_FINETUNE_PREPROCESS);
    rec->image_size = S;
    snprintf(rec->image_size_text, sizeof rec->image_size_text, "%d", S);
    snprintf(rec->finetune, sizeof rec->finetune, "%s", fl->stage);
    snprintf(rec->finetune_lr, sizeof rec->finetune_lr, "%g", (double)fl->lr);
    if (saved) {
        if (check_resume(rec, saved_path, err)) return -1;
        if (saved->feat_L != G * G || saved->feat_D != encoder_dim(t->enc))
            return error_set(err, "%s: annotations %d x %d, %s gives %d x %d", saved_path,
                             saved->feat_L, saved->feat_D, arch, G * G, encoder_dim(t->enc));
    }
    cfg->feat_L = G * G;
    cfg->feat_D = encoder_dim(t->enc);
    cfg->image_size = S;
    sat_finetune_init(&t->ft, t->enc, S, batch);
    t->on = t->training = true;
    t->lr = fl->lr;
    t->S = S, t->B = batch;
    t->pixels = xmalloc((size_t)batch * 3 * S * S * sizeof(float));
    if (saved && read_stage_state(&t->ft, saved_path, err)) return -1;
    if (!quiet)
        fprintf(stderr, "caption train: fine-tuning %s's %s (%zu parameters, Adam lr %g), "
                        "%d x %d annotations at %d px, one worker\n",
                rec->spec, fl->stage, t->ft.stage.n_params, (double)fl->lr, G * G,
                encoder_dim(t->enc), S);
    return 0;
}

int caption_finetune_open_eval(CaptionFineTune *t, const SatConfig *cfg, const char *model_path,
                               const char *features, const char *encoder_arg, int B, Error *err) {
    memset(t, 0, sizeof *t);
    EncoderRecord have = {0};
    if (cfg->feat_L > 0 && encoder_record_read(&have, model_path, err)) return -1;
    if (!have.finetune[0] && encoder_arg)
        return error_set(err, "--encoder: %s did not fine-tune an encoder (eval runs one only "
                              "for such a model)", model_path);
    if (!have.finetune[0]) return 0;
    if (features)
        return error_set(err, "%s: the model fine-tuned %s's %s; its annotations come from its "
                              "own stage, not from --features (leave it out)", model_path,
                         have.spec, have.finetune);
    if (caption_annotator_open(&t->ann, cfg, model_path, encoder_arg, err)) return -1;
    t->on = true;
    t->S = t->ann.S, t->B = B;
    t->pixels = xmalloc((size_t)B * 3 * t->S * t->S * sizeof(float));
    return 0;
}

void caption_finetune_close(CaptionFineTune *t) {
    if (t->training) sat_finetune_free(&t->ft);
    if (t->enc) encoder_free(t->enc);
    caption_annotator_close(&t->ann);
    free(t->pixels);
    memset(t, 0, sizeof *t);
}

float *caption_finetune_pixels(CaptionFineTune *t, int j) {
    CHECK(j >= 0 && j < t->B, "fine-tuning: image %d of a batch of %d", j, t->B);
    return t->pixels + (size_t)j * 3 * t->S * t->S;
}

void caption_finetune_annotate(CaptionFineTune *t, float *annot, int k) {
    for (int j = 0; j < k; j++) caption_finetune_normalize(caption_finetune_pixels(t, j), t->S);
    if (t->training) {
        const float *a = sat_finetune_annotations(&t->ft, t->pixels, k);
        memcpy(annot, a, (size_t)k * t->ft.G * t->ft.G * t->ft.D * sizeof(float));
    } else {
        encoder_forward(t->ann.enc, &t->ann.ws, annot, t->pixels, k);
    }
}

void caption_finetune_forward_backward(CaptionFineTune *t, SatModel *m, SatLoss *loss,
                                       const int *words, const int *lens, int k, uint64_t seed) {
    for (int j = 0; j < k; j++) caption_finetune_normalize(caption_finetune_pixels(t, j), t->S);
    const float *annot = sat_finetune_annotations(&t->ft, t->pixels, k);
    m->annot_grad = 1;
    sat_forward(m, loss, annot, words, lens, k, 1, seed, 0);
    if (!isfinite(loss->loss)) return;
    block_zero(&m->grads);
    sat_backward(m);
    sat_finetune_backward(&t->ft, m);
}

static void view_block(Block *b, BlockTensor *bt, const char *name, float *data, size_t n);

int caption_finetune_check_finite(CaptionFineTune *t, long step, const char *ckpt, Error *err) {
    Block grad;
    BlockTensor gt;
    view_block(&grad, &gt, STAGE_TENSOR, t->ft.grad, t->ft.stage.n_params);
    return train_check_finite(step, "loss", 0.0, &grad, ckpt, err);
}

float caption_finetune_step(CaptionFineTune *t, const AdamConfig *adam, long step, float lr_scale,
                            float clip) {
    return sat_finetune_step(&t->ft, adam, step, t->lr * lr_scale, clip);
}

static void view_block(Block *b, BlockTensor *bt, const char *name, float *data, size_t n) {
    memset(bt, 0, sizeof *bt);
    snprintf(bt->name, sizeof bt->name, "%s", name);
    bt->ndim = 1;
    bt->shape[0] = (int64_t)n;
    bt->numel = n;
    *b = (Block){.tensors = bt, .count = 1, .cap = 1, .numel = n, .data = data};
}

int caption_finetune_blocks(const CaptionFineTune *t, Block *blocks, BlockTensor *tensors,
                            bool with_state) {
    if (!t || !t->on || !t->training) return 0;
    const size_t n = t->ft.stage.n_params;
    view_block(&blocks[0], &tensors[0], STAGE_TENSOR, t->ft.stage.params, n);
    if (!with_state) return 1;
    view_block(&blocks[1], &tensors[1], ADAM_M_TENSOR, t->ft.adam_m, n);
    view_block(&blocks[2], &tensors[2], ADAM_V_TENSOR, t->ft.adam_v, n);
    return 3;
}
