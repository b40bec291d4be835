#include "cli/caption_train_flags.h"

#include <stdio.h>
#include <string.h>

#include "cli/args.h"
#include "cli/caption_model.h"
#include "cli/threads.h"
#include "core/adam.h"
#include "datasets/captions.h"
#include "seq/vocab.h"
#include "vision/cnn.h"

static const char *const KIND_HELP =
    "additive | dot | scaled-dot | multiplicative | multi-head | local-monotonic | "
    "local-predictive | hard | none (dot and scaled-dot need --hidden equal to the annotation "
    "size, the last --channels entry)";



// The flags' defaults: the model's are sat_config_default's.
static void flags_default(CaptionTrainFlags *f) {
    SatConfig dc;
    sat_config_default(&dc);
    *f = (CaptionTrainFlags){.attention = "additive", .channels = "32,64,128",
                      .query = sat_query_name(dc.query), .image_size = dc.image_size,
                      .embed = dc.E, .hidden = dc.H, .attn_dim = dc.attn.A, .heads = dc.attn.heads,
                      .window = dc.attn.window, .max_len = dc.max_len, .min_count = 1,
                      .epochs = 10, .threads = threads_available(), .val_beam = 3,
                      .log_every = 20, .ema = 0.999f,
                      .optim = {.seed = 1, .batch = 32, .lr = 2e-3f, .lr_decay = 0.7f,
                                .clip = 5.0f, .beta1 = adam_defaults(2e-3f).beta1},
                      .lambda = dc.lambda, .dropout = dc.dropout,
                      .entropy = dc.entropy_weight, .length_alpha = 0.7f,
                      .decoder = sat_decoder_name(dc.decoder), .d_model = dc.tf.d_model,
                      .d_ff = dc.tf.d_ff, .layers = dc.tf.layers, .enc_layers = dc.tf.enc_layers,
                      .positions = dc.tf.positions, .map_layer = dc.tf.map_layer};
    caption_data_flags_default(&f->data);
    caption_finetune_flags_default(&f->finetune);
}

// The first flag given that only the LSTM decoder reads, or NULL.
static const char *first_given_lstm_flag(const CaptionTrainFlags *f) {
    const struct {
        bool given;
        const char *name;
    } l[] = {{f->given.attention, "attention"}, {f->given.embed, "embed"}, {f->given.hidden, "hidden"},
             {f->given.attn_dim, "attn-dim"},   {f->given.window, "window"}, {f->given.query, "query"},
             {f->given.beta_vector, "beta-vector"}, {f->given.lambda, "lambda"},
             {f->given.entropy, "entropy"}};
    for (size_t i = 0; i < sizeof l / sizeof l[0]; i++)
        if (l[i].given) return l[i].name;
    return NULL;
}

// The first flag given that only the Transformer decoder reads, or NULL.
static const char *first_given_transformer_flag(const CaptionTrainFlags *f) {
    const struct {
        bool given;
        const char *name;
    } t[] = {{f->given.d_model, "d-model"},     {f->given.d_ff, "d-ff"},
             {f->given.layers, "layers"},       {f->given.enc_layers, "enc-layers"},
             {f->given.positions, "positions"}, {f->given.post_ln, "post-ln"},
             {f->given.map_layer, "map-layer"}, {f->given.warmup, "warmup"}};
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++)
        if (t[i].given) return t[i].name;
    return NULL;
}

// What the table of flags cannot say: one budget at most, and no image size or channels
// with a feature cache. Returns 0, or 2 after one line on stderr.
static int check_flags(const CaptionTrainFlags *f) {
    if (f->given.epochs + f->given.steps + f->given.minutes + f->given.cpu_budget > 1) {
        if (args_reporting_process())
            fprintf(stderr, "--epochs, --steps, --minutes, --cpu-budget: give at most one\n");
        return 2;
    }
    // The annotations' image size and channels are the cache's (its encoder's).
    if (f->data.features && (f->given.image_size || f->given.channels)) {
        fprintf(stderr, "%s: not with --features: the annotations' size and channels are the "
                        "feature cache's (set when it was made by caption features)\n",
                f->given.image_size && f->given.channels ? "--image-size, --channels"
                : f->given.image_size                    ? "--image-size"
                                                         : "--channels");
        return 2;
    }
    // Flags of the other decoder would be ignored: refused (on --resume without --decoder the
    // checkpoint's kind decides, and caption_train_flags_check_resume compares them).
    if (!f->resume || f->given.decoder) {
        const bool tf = !strcmp(f->decoder, "transformer");
        const char *other = tf ? first_given_lstm_flag(f) : first_given_transformer_flag(f);
        if (other) {
            fprintf(stderr, "--%s: %s decoder's flag, not with --decoder %s\n", other,
                    tf ? "the LSTM" : "the Transformer", tf ? "transformer" : "lstm");
            return 2;
        }
    }
    return 0;
}

int caption_train_flags_parse(CaptionTrainFlags *f, int argc, char **argv, int *code) {
    flags_default(f);
    CaptionDataFlags *df = &f->data;
    ArgSpec specs[] = {
        {"data", ARG_STRING, &df->data, "scenes | flickr8k:DIR | coco:JSON:IMAGES | karpathy:JSON:IMAGES | tsv:FILE:IMAGES (on --resume: the run's, when left out)", .given = &f->given.data},
        {"held-out", ARG_DOUBLE, &df->held_out, HELD_OUT_HELP, .metavar = "F", .has_min = true, .min = 0, .min_exclusive = true, .has_max = true, .max = 0.5, .max_exclusive = true},
        {"features", ARG_STRING, &df->features, FEATURES_HELP, .metavar = "FEATURES", .given = NULL},
        {"verify-features", ARG_FLAG, &df->verify_features, VERIFY_FEATURES_HELP, .given = NULL},
        {"encoder", ARG_STRING, &f->finetune.encoder, "with --fine-tune: the pretrained encoder, vgg16 | vgg19 | resnet18 ... resnet152, then ':' and its safetensors weights", .metavar = "ARCH:FILE", .given = NULL},
        {"fine-tune", ARG_STRING, &f->finetune.stage, "train the encoder's last stage with the decoder, batch norm frozen: conv5 (VGG) | layer4 (ResNet); images go through the encoder every step, on one worker (--threads go to its BLAS), one process", .metavar = "STAGE", .given = NULL},
        {"fine-tune-lr", ARG_FLOAT, &f->finetune.lr, "Adam learning rate of the fine-tuned stage (decayed as --lr)", .has_min = true, .min = 0, .given = &f->finetune.lr_given},
        {"decoder", ARG_STRING, &f->decoder, "lstm (Show, Attend and Tell's attention LSTM) | transformer (a Transformer decoder over the annotation grid: --d-model, --heads, --d-ff, --layers, --enc-layers, --positions, --post-ln, --map-layer, --dropout)", .metavar = "KIND", .given = &f->given.decoder},
        {"attention", ARG_STRING, &f->attention, KIND_HELP, .given = &f->given.attention},
        {"out", ARG_STRING, &f->out, "output folder", .metavar = "DIR", .required = true},
        {"epochs", ARG_INT, &f->epochs, "training epochs", .has_min = true, .min = 1, .given = &f->given.epochs},
        {"steps", ARG_LONG, &f->steps, "stop at this total step count instead", .has_min = true, .min = 1, .given = &f->given.steps},
        {"minutes", ARG_DOUBLE, &f->minutes, "stop after this many minutes instead", .has_min = true, .min = 0, .min_exclusive = true, .given = &f->given.minutes},
        {"cpu-budget", ARG_DOUBLE, &f->cpu_budget, "stop at the first step past this many CPU seconds of the process (all its threads; steps, validations and checkpoints), counted across --resume (the state's train.cpu_seconds) instead: a budget the load of a shared machine does not change", .metavar = "SECONDS", .has_min = true, .min = 0, .min_exclusive = true, .given = &f->given.cpu_budget},
        {"seed", ARG_LONG, &f->optim.seed, "random seed (initialisation, order, dropout, sampling)", .given = &f->optim.given.seed},
        {"resume", ARG_FLAG, &f->resume, "continue from OUT/state.safetensors; model flags given must match it, --batch/--lr/--lr-decay/--clip/--seed/--ema (and --fine-tune-lr) given replace its values", .given = NULL},
        {"force", ARG_FLAG, &f->force, "start a new run in an OUT that holds one, replacing it: its checkpoint, run.json, report and pictures go (not with --resume)", .given = NULL},
        {"threads", ARG_INT, &f->threads, "threads: data-parallel workers over the batch", .has_min = true, .min = 1, .has_max = true, .max = THREADS_MAX, .default_note = THREADS_DEFAULT_NOTE},
        {"overlap-sums", ARG_FLAG, &f->overlap_sums, "under mpirun, with the CNN encoder (no effect with --features): sum the decoder's gradient over the ranks on a thread of its own while the CNN's backward runs (the same bits; pays where a core is free to drive the transfer and the link is slow: bench/RESULTS.md)", .given = NULL},
        {"image-size", ARG_INT, &f->image_size, "image side in pixels", .has_min = true, .min = 8, .has_max = true, .max = 1024, .given = &f->given.image_size},
        {"channels", ARG_STRING, &f->channels, "CNN channels, one conv+pool per entry; the last is the annotation size", .metavar = "LIST", .given = &f->given.channels},
        {"embed", ARG_INT, &f->embed, "word embedding size", .has_min = true, .min = 1, .has_max = true, .max = 8192, .given = &f->given.embed},
        {"hidden", ARG_INT, &f->hidden, "LSTM hidden size", .has_min = true, .min = 1, .has_max = true, .max = 8192, .given = &f->given.hidden},
        {"attn-dim", ARG_INT, &f->attn_dim, "attention hidden size", .has_min = true, .min = 1, .has_max = true, .max = 8192, .given = &f->given.attn_dim},
        {"d-model", ARG_INT, &f->d_model, "transformer: model size (a multiple of 4: the grid's 2-D positions)", .has_min = true, .min = 1, .has_max = true, .max = 8192, .given = &f->given.d_model},
        {"d-ff", ARG_INT, &f->d_ff, "transformer: feed-forward hidden size", .has_min = true, .min = 1, .has_max = true, .max = 65536, .given = &f->given.d_ff},
        {"layers", ARG_INT, &f->layers, "transformer: decoder layers", .has_min = true, .min = 1, .has_max = true, .max = 32, .given = &f->given.layers},
        {"enc-layers", ARG_INT, &f->enc_layers, "transformer: encoder layers over the annotation grid (0: its projection only)", .has_min = true, .min = 0, .has_max = true, .max = 32, .given = &f->given.enc_layers},
        {"positions", ARG_INT, &f->positions, "transformer: word positions the table holds (at least --max-len + 1)", .has_min = true, .min = 1, .has_max = true, .max = 4096, .given = &f->given.positions},
        {"post-ln", ARG_FLAG, &f->post_ln, "transformer: post-LN layers (the paper's; default pre-LN with a final norm)", .given = &f->given.post_ln},
        {"map-layer", ARG_INT, &f->map_layer, "transformer: the decoder layer whose cross-attention (mean over heads) makes the attention maps (-1: the last)", .has_min = true, .min = -1, .has_max = true, .max = 31, .given = &f->given.map_layer},
        {"warmup", ARG_INT, &f->warmup, "transformer: the learning rate of Vaswani et al.'s schedule, rising linearly to --lr at step N and falling as 1/sqrt(step) after (in place of --lr-decay; 0: off)", .metavar = "N", .has_min = true, .min = 0, .has_max = true, .max = 100000000, .given = &f->given.warmup},
        {"heads", ARG_INT, &f->heads, "multi-head attention, or the transformer's: heads", .has_min = true, .min = 1, .has_max = true, .max = 64, .given = &f->given.heads},
        {"window", ARG_INT, &f->window, "local: half-width W (at least 1 with a local --attention)", .has_min = true, .min = 0, .has_max = true, .max = 1024, .given = &f->given.window},
        {"batch", ARG_INT, &f->optim.batch, "batch size", .has_min = true, .min = 1, .has_max = true, .max = CAPTION_BATCH_MAX, .given = &f->optim.given.batch},
        {"max-len", ARG_INT, &f->max_len, "caption words at most", .has_min = true, .min = 1, .has_max = true, .max = 256, .given = &f->given.max_len},
        {"min-count", ARG_INT, &f->min_count, "vocabulary: minimum word count", .has_min = true, .min = 1},
        {"lr", ARG_FLOAT, &f->optim.lr, "Adam learning rate", .has_min = true, .min = 0, .min_exclusive = true, .given = &f->optim.given.lr},
        {"lr-decay", ARG_FLOAT, &f->optim.lr_decay, "learning rate factor per epoch", .has_min = true, .min = 0, .min_exclusive = true, .has_max = true, .max = 1, .given = &f->optim.given.lr_decay},
        {"ema", ARG_FLOAT, &f->ema, "validate, and keep as the best model, an exponential moving average of the weights with this decay (0 = off)", .has_min = true, .min = 0, .has_max = true, .max = 1, .max_exclusive = true, .given = &f->given.ema},
        {"clip", ARG_FLOAT, &f->optim.clip, "gradient global-norm clip (0 = off)", .has_min = true, .min = 0, .given = &f->optim.given.clip},
        {"lambda", ARG_FLOAT, &f->lambda, "doubly stochastic regulariser weight", .has_min = true, .min = 0, .given = &f->given.lambda},
        {"dropout", ARG_FLOAT, &f->dropout, "dropout before the deep output; transformer: in every layer (default there 0.1)", .has_min = true, .min = 0, .has_max = true, .max = 1, .max_exclusive = true, .given = &f->given.dropout},
        {"query", ARG_STRING, &f->query, "state that queries the attention: previous (Xu et al. 2015: h before the step's word) | current (h after it, Lu et al. 2017)", .metavar = "S", .given = &f->given.query},
        {"beta-vector", ARG_FLAG, &f->beta_vector, "gate beta as a D-vector (default scalar)", .given = &f->given.beta_vector},
        {"entropy", ARG_FLOAT, &f->entropy, "hard attention: entropy bonus weight", .has_min = true, .min = 0, .given = &f->given.entropy},
        {"val-beam", ARG_INT, &f->val_beam, "beam width of the per-epoch validation (as the test's decoding, so the best model is chosen by what is scored)", .has_min = true, .min = 1, .has_max = true, .max = 64},
        {"val-count", ARG_INT, &f->val_count, "validation images per epoch (0 = all)", .has_min = true, .min = 0},
        {"length-alpha", ARG_FLOAT, &f->length_alpha, "beam length normalisation exponent", .has_min = true, .min = 0},
        {"log-every", ARG_INT, &f->log_every, "CSV row every N steps", .has_min = true, .min = 1},
        {"checkpoint-every", ARG_INT, &f->checkpoint_every, "also write OUT/state.safetensors every N steps (0: at epoch ends only)", .has_min = true, .min = 0},
        SCENES_AND_CACHE_SPECS(df),
        {"json", ARG_FLAG, &f->json, "print the final summary as one JSON object on stdout", .given = NULL},
        {"quiet", ARG_FLAG, &f->quiet, "no progress bar", .given = NULL},
    };
    if (args_parse_for_command(argc, argv, specs, ARGS_LEN(specs), "caption train --out DIR [flags]", NULL, code))
        return 1;
    *code = check_flags(f);
    return *code != 0;
}

int caption_train_flags_config(SatConfig *cfg, const CaptionTrainFlags *f, Error *err) {
    sat_config_default(cfg);
    cfg->image_size = f->image_size;
    if (cnn_config_parse(&cfg->cnn, f->channels, "--channels", err) ||
        caption_attention_parse(cfg, f->attention, err))
        return -1;
    cfg->E = f->embed;
    cfg->H = f->hidden;
    cfg->max_len = f->max_len;
    cfg->attn.A = f->attn_dim;
    cfg->attn.heads = f->heads;
    cfg->attn.window = f->window;
    cfg->beta_vector = f->beta_vector;
    if (sat_query_parse(f->query, &cfg->query))
        return error_set(err, "--query: expected previous or current, got '%s'", f->query);
    cfg->lambda = f->lambda;
    cfg->dropout = f->dropout;
    cfg->entropy_weight = f->entropy;
    cfg->V = VOCAB_NSPECIAL + 1;  // checked again once the vocabulary is known
    if (sat_decoder_parse(f->decoder, &cfg->decoder))
        return error_set(err, "--decoder: expected lstm or transformer, got '%s'", f->decoder);
    SatTfConfig *t = &cfg->tf;
    t->d_model = f->d_model, t->heads = f->heads, t->d_ff = f->d_ff, t->layers = f->layers;
    t->enc_layers = f->enc_layers, t->positions = f->positions, t->map_layer = f->map_layer;
    t->post_ln = f->post_ln;
    t->warmup = f->warmup;
    if (f->given.dropout) t->dropout = f->dropout;
    return 0;
}

static void format_channels(char *buf, size_t cap, const CnnConfig *c) {
    size_t k = 0;
    buf[0] = 0;
    for (int i = 0; i < c->n_layers && k < cap; i++)
        k += (size_t)snprintf(buf + k, cap - k, "%s%d", i ? "," : "", c->channels[i]);
}

int caption_train_flags_check_resume(const CaptionTrainFlags *f, const SatConfig *want, const SatConfig *saved,
                                     const char *saved_data, const char *path, Error *err) {
    FlagDiffs d = {0};
    if (saved_data && !caption_spec_same(f->data.data, saved_data))
        flag_diffs_text(&d, "data", f->given.data, f->data.data, saved_data);
    char a[128], b[128];
    format_channels(a, sizeof a, &want->cnn);
    format_channels(b, sizeof b, &saved->cnn);
    flag_diffs_int(&d, "image-size", f->given.image_size, want->image_size, saved->image_size);
    flag_diffs_text(&d, "channels", f->given.channels, a, b);
    flag_diffs_int(&d, "embed", f->given.embed, want->E, saved->E);
    flag_diffs_int(&d, "hidden", f->given.hidden, want->H, saved->H);
    flag_diffs_int(&d, "attn-dim", f->given.attn_dim, want->attn.A, saved->attn.A);
    flag_diffs_int(&d, "heads", f->given.heads, want->attn.heads, saved->attn.heads);
    flag_diffs_int(&d, "window", f->given.window, want->attn.window, saved->attn.window);
    flag_diffs_int(&d, "max-len", f->given.max_len, want->max_len, saved->max_len);
    flag_diffs_text(&d, "attention", f->given.attention, caption_attention_name(want),
                    caption_attention_name(saved));
    flag_diffs_text(&d, "query", f->given.query, sat_query_name(want->query), sat_query_name(saved->query));
    flag_diffs_switch(&d, "beta-vector", f->given.beta_vector, want->beta_vector, saved->beta_vector);
    flag_diffs_float(&d, "lambda", f->given.lambda, want->lambda, saved->lambda);
    const bool tf = saved->decoder == SAT_DECODER_TRANSFORMER;  // its dropout is the layers'
    flag_diffs_float(&d, "dropout", f->given.dropout, tf ? want->tf.dropout : want->dropout,
                     tf ? saved->tf.dropout : saved->dropout);
    flag_diffs_float(&d, "entropy", f->given.entropy, want->entropy_weight, saved->entropy_weight);
    flag_diffs_text(&d, "decoder", f->given.decoder, sat_decoder_name(want->decoder),
                    sat_decoder_name(saved->decoder));
    const SatTfConfig *w = &want->tf, *v = &saved->tf;
    flag_diffs_int(&d, "d-model", f->given.d_model, w->d_model, v->d_model);
    flag_diffs_int(&d, "d-ff", f->given.d_ff, w->d_ff, v->d_ff);
    flag_diffs_int(&d, "layers", f->given.layers, w->layers, v->layers);
    flag_diffs_int(&d, "enc-layers", f->given.enc_layers, w->enc_layers, v->enc_layers);
    flag_diffs_int(&d, "positions", f->given.positions, w->positions, v->positions);
    flag_diffs_int(&d, "map-layer", f->given.map_layer, w->map_layer, v->map_layer);
    flag_diffs_switch(&d, "post-ln", f->given.post_ln, w->post_ln, v->post_ln);
    flag_diffs_int(&d, "warmup", f->given.warmup, w->warmup, v->warmup);
    return flag_diffs_refuse(&d, path, err);
}
