// `text translate`: dispatch and `text translate train` (cli/text_translate.h). eval is in
// cli/text_translate_eval.c, translate in cli/text_translate_predict.c, show in
// cli/text_translate_show.c, score in cli/text_translate_score.c, report in
// cli/report_translate.c.
#include "cli/text_translate.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/args.h"
#include "cli/report_translate.h"
#include "cli/text_translate_score.h"
#include "cli/text_translate_show.h"
#include "cli/text_translate_state.h"
#include "cli/threads.h"
#include "cli/train_command.h"
#include "core/adam.h"
#include "core/check.h"
#include "core/csvlog.h"
#include "core/timer.h"

typedef struct {
    const char *data, *root;
    int attention, embed, hidden, dec_embed, attn_size, window, max_src, max_len, train_size;
    int bpe_merges;
    int model, d_model, heads, d_ff, layers, enc_layers, dec_layers, positions, map_layer, warmup;
    bool post_ln;
    float dropout, label_smoothing;
    TrainCommandFlags cmd;  // --out, --resume, --force, --json, --threads, the plan
    TrainOptimFlags optim;
    bool input_feeding, forward_only, reverse_only, annot_embed;
    struct {
        bool data, attention, embed, hidden, dec_embed, attn_size, window, max_src, max_len,
            train_size, bpe_merges, dropout, label_smoothing, input_feeding, forward_only,
            reverse_only, annot_embed;
        bool model, d_model, heads, d_ff, layers, enc_layers, dec_layers, positions, map_layer,
            warmup, post_ln;
    } given;
} TrainFlags;

static int parse_flags(TrainFlags *f, int argc, char **argv, int *code) {
    *f = (TrainFlags){.data = "dates", .root = "data", .attention = 0, .embed = 32, .hidden = 64,
                      .dec_embed = 32, .attn_size = 64, .window = 5, .max_src = 64, .max_len = 64,
                      .train_size = 20000, .bpe_merges = 8000,
                      .d_model = 128, .heads = 4, .d_ff = 256, .layers = 2, .map_layer = -1,
                      .cmd = {.threads = 1, .plan = {.log_every = 10}},
                      .optim = {.seed = 1, .batch = 64, .lr = 1e-3f, .beta1 = 0.9f, .clip = 5.0f,
                                .lr_decay = 1}};
    const ArgSpec own[] = {
        {"data", ARG_STRING, &f->data, "dates (the synthetic date task), bible-en-es (make data's verse pairs) or pairs:FILE (SOURCE<TAB>TARGET lines)", .metavar = "SPEC", .given = &f->given.data},
        {"data-root", ARG_STRING, &f->root, "folder holding bible/", .metavar = "DIR"},
        {"out", ARG_STRING, &f->cmd.out, "output folder (model.safetensors, log.csv, loss.png, run.json)", .metavar = "DIR", .required = true},
        {"model", ARG_CHOICE, &f->model, "lstm (a bidirectional LSTM encoder and the attention LSTM decoder: --attention, --embed, --hidden, --dec-embed, --attn-size, --window, --input-feeding) or transformer (Vaswani et al. 2017: --d-model, --heads, --d-ff, --layers, --enc-layers, --dec-layers, --positions, --post-ln, --map-layer, --warmup)", .choices = TRANSLATE_MODELS, .given = &f->given.model},
        {"d-model", ARG_INT, &f->d_model, "transformer: model size (even: the sinusoidal positions)", .has_min = true, .min = 1, .has_max = true, .max = 8192, .given = &f->given.d_model},
        {"heads", ARG_INT, &f->heads, "transformer: attention heads (dividing --d-model)", .has_min = true, .min = 1, .has_max = true, .max = 1024, .given = &f->given.heads},
        {"d-ff", ARG_INT, &f->d_ff, "transformer: feed-forward size", .has_min = true, .min = 1, .has_max = true, .max = 65536, .given = &f->given.d_ff},
        {"layers", ARG_INT, &f->layers, "transformer: encoder and decoder layers (unless --enc-layers / --dec-layers)", .has_min = true, .min = 1, .has_max = true, .max = TRANSFORMER_MAX_LAYERS, .given = &f->given.layers},
        {"enc-layers", ARG_INT, &f->enc_layers, "transformer: encoder layers (default --layers)", .has_min = true, .min = 1, .has_max = true, .max = TRANSFORMER_MAX_LAYERS, .given = &f->given.enc_layers},
        {"dec-layers", ARG_INT, &f->dec_layers, "transformer: decoder layers (default --layers)", .has_min = true, .min = 1, .has_max = true, .max = TRANSFORMER_MAX_LAYERS, .given = &f->given.dec_layers},
        {"positions", ARG_INT, &f->positions, "transformer: rows of the sinusoid table (at least the source tokens and target words + 1; default the larger)", .has_min = true, .min = 1, .has_max = true, .max = 65536, .given = &f->given.positions},
        {"post-ln", ARG_FLAG, &f->post_ln, "transformer: post-LN layers (the paper's; default pre-LN with final norms)", .given = &f->given.post_ln},
        {"map-layer", ARG_INT, &f->map_layer, "transformer: the decoder layer whose cross-attention (mean over heads) makes the alignments of show and eval (-1: the last)", .has_min = true, .min = -1, .has_max = true, .max = TRANSFORMER_MAX_LAYERS - 1, .given = &f->given.map_layer},
        {"warmup", ARG_INT, &f->warmup, "transformer: the learning rate of Vaswani et al.'s schedule, rising linearly to --lr at step N and falling as 1/sqrt(step) after (0: constant --lr)", .metavar = "N", .has_min = true, .min = 0, .has_max = true, .max = 100000000, .given = &f->given.warmup},
        {"attention", ARG_CHOICE, &f->attention, "bahdanau (additive, previous state), luong-dot / luong-general / luong-concat (current state), local-m / local-p (Luong's local, --window), none (one fixed context)", .choices = TRANSLATE_ATTENTIONS, .given = &f->given.attention},
        {"embed", ARG_INT, &f->embed, "source embedding size", .has_min = true, .min = 1, .has_max = true, .max = 65536, .given = &f->given.embed},
        {"hidden", ARG_INT, &f->hidden, "encoder LSTM units per direction (the decoder's: twice this)", .has_min = true, .min = 1, .has_max = true, .max = 65536, .given = &f->given.hidden},
        {"dec-embed", ARG_INT, &f->dec_embed, "target embedding size", .has_min = true, .min = 1, .has_max = true, .max = 65536, .given = &f->given.dec_embed},
        {"attn-size", ARG_INT, &f->attn_size, "additive attention's hidden size (and local-p's)", .has_min = true, .min = 1, .has_max = true, .max = 65536, .given = &f->given.attn_size},
        {"window", ARG_INT, &f->window, "local-m / local-p: the window's half-width", .has_min = true, .min = 1, .has_max = true, .max = 4096, .given = &f->given.window},
        {"max-src", ARG_INT, &f->max_src, "pairs: source tokens kept (dates: 40 characters)", .has_min = true, .min = 1, .has_max = true, .max = 4096, .given = &f->given.max_src},
        {"max-len", ARG_INT, &f->max_len, "pairs: target tokens kept (dates: 10 characters)", .has_min = true, .min = 1, .has_max = true, .max = 4096, .given = &f->given.max_len},
        {"train-size", ARG_INT, &f->train_size, "dates: training examples", .has_min = true, .min = 1, .has_max = true, .max = 10000000, .given = &f->given.train_size},
        {"input-feeding", ARG_FLAG, &f->input_feeding, "Luong's input feeding: the attentional vector tanh(W_c [context; h_t]) feeds the next step and the output (not with bahdanau, which queries the previous state)", .given = &f->given.input_feeding},
        {"forward-only", ARG_FLAG, &f->forward_only, "the encoder is one LSTM reading left to right (default both directions): each state knows only its token and those before it; annotations of --hidden, not twice it (not with luong-dot)", .given = &f->given.forward_only},
        {"reverse-only", ARG_FLAG, &f->reverse_only, "the encoder is one LSTM reading right to left (Sutskever et al. 2014's reversed source): each state knows only its token and those after it; annotations of --hidden (not with --forward-only or luong-dot)", .given = &f->given.reverse_only},
        {"annot-embed", ARG_FLAG, &f->annot_embed, "each annotation (the attention's key and value) is the encoder's state with its token's source embedding beside it (annotations of --embed more): the score sees which character a position holds (not with luong-dot or none)", .given = &f->given.annot_embed},
        {"dropout", ARG_FLOAT, &f->dropout, "training: dropout on the source embeddings, the encoder's states and the decoder's output state (transformer: inside its layers, where PyTorch's put it)", .has_min = true, .min = 0, .has_max = true, .max = 1, .max_exclusive = true, .given = &f->given.dropout},
        {"label-smoothing", ARG_FLOAT, &f->label_smoothing, "training: the loss's target is (1 - X) the word + X spread evenly over the vocabulary", .has_min = true, .min = 0, .has_max = true, .max = 1, .max_exclusive = true, .given = &f->given.label_smoothing},
        {"bpe-merges", ARG_INT, &f->bpe_merges, "pairs: BPE merges learned on the training split (both sides, one model)", .has_min = true, .min = 0, .has_max = true, .max = BPE_MAX_MERGES, .given = &f->given.bpe_merges},
    };
    static const TrainCommandHelp help = {
        .batch = "pairs per step", .batch_max = TRANSLATE_BATCH_MAX,
        .lr_decay = "the learning rate's factor per epoch: --lr x X^(step / steps per epoch), "
                    "an exponential decay (1: constant; the Transformer's --warmup schedule "
                    "replaces it)",
        .clip = "clip the global gradient norm at this (0: off)",
        .epochs = "train until this many epochs in total (no --steps, --epochs or --minutes: one)",
        .seed = "seed of initialisation and data order",
        .force = "start a new run in an OUT that holds one, replacing it (not with --resume)"};
    ArgSpec specs[ARGS_LEN(own) + TRAIN_COMMAND_SPECS];
    const int n = train_command_specs(specs, own, ARGS_LEN(own), &f->cmd, &f->optim, &help);
    if (args_parse_for_command(argc, argv, specs, n,
                               "text translate train --out DIR [flags]", "text translate", code))
        return 1;
    train_plan_default(&f->cmd.plan);
    return 0;
}

typedef struct {
    const TrainFlags *f;
    TrainCommandRun cmd;  // the folder, its lock, log.csv, the budget (cli/train_command.h)
    TranslateState st;
    TranslateData train, valid;
    Translator m;              // --model lstm
    TtModel tt;                // --model transformer
    Block mom1, mom2;
    bool model_made;
    AdamConfig adam;
    int steps_per_epoch;
    int *src, *src_len, *tgt, *tgt_len, *rows;  // the step's batch
    TrainOrder order;
    TrainNorms norms;
    double loss_acc;
    long acc_n;
    double last_loss, last_valid_loss;
} TrainRun;

static bool is_dates(const char *spec) { return strcmp(spec, "dates") == 0; }

static bool is_transformer(const TrainRun *r) { return r->st.model == TRANSLATE_MODEL_TRANSFORMER; }
static Block *params_(TrainRun *r) { return is_transformer(r) ? &r->tt.params : &r->m.params; }
static Block *grads_(TrainRun *r) { return is_transformer(r) ? &r->tt.grads : &r->m.grads; }

typedef struct {
    bool given;
    const char *name;
} GivenFlag;

static const char *first_given_(const GivenFlag *g, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (g[i].given) return g[i].name;
    return NULL;
}

// The first flag given that only the other model kind reads (model: the run's), or NULL.
static const char *first_given_foreign_flag(const TrainFlags *f, int model) {
    const GivenFlag lstm[] = {{f->given.attention, "attention"},   {f->given.embed, "embed"},
                              {f->given.hidden, "hidden"},         {f->given.dec_embed, "dec-embed"},
                              {f->given.attn_size, "attn-size"},   {f->given.window, "window"},
                              {f->given.input_feeding, "input-feeding"},
                              {f->given.forward_only, "forward-only"},
                              {f->given.reverse_only, "reverse-only"},
                              {f->given.annot_embed, "annot-embed"}};
    const GivenFlag tf[] = {{f->given.d_model, "d-model"},       {f->given.heads, "heads"},
                            {f->given.d_ff, "d-ff"},             {f->given.layers, "layers"},
                            {f->given.enc_layers, "enc-layers"}, {f->given.dec_layers, "dec-layers"},
                            {f->given.positions, "positions"},   {f->given.post_ln, "post-ln"},
                            {f->given.map_layer, "map-layer"},   {f->given.warmup, "warmup"}};
    return model == TRANSLATE_MODEL_TRANSFORMER ? first_given_(lstm, sizeof lstm / sizeof lstm[0])
                                                : first_given_(tf, sizeof tf / sizeof tf[0]);
}

// The Transformer's flags against a checkpoint's configuration.
static void transformer_flag_diffs(FlagDiffs *d, const TrainFlags *f, const TranslateState *st) {
    const TtConfig *t = &st->tt;
    const int enc = f->given.enc_layers ? f->enc_layers : f->layers;
    const int dec = f->given.dec_layers ? f->dec_layers : f->layers;
    flag_diffs_int(d, "d-model", f->given.d_model, f->d_model, t->d_model);
    flag_diffs_int(d, "heads", f->given.heads, f->heads, t->heads);
    flag_diffs_int(d, "d-ff", f->given.d_ff, f->d_ff, t->d_ff);
    flag_diffs_int(d, "enc-layers", f->given.enc_layers || f->given.layers, enc, t->enc_layers);
    flag_diffs_int(d, "dec-layers", f->given.dec_layers || f->given.layers, dec, t->dec_layers);
    flag_diffs_int(d, "positions", f->given.positions, f->positions, tt_positions(t));
    flag_diffs_switch(d, "post-ln", f->given.post_ln, f->post_ln, t->post_ln);
    flag_diffs_int(d, "map-layer", f->given.map_layer, f->map_layer, t->map_layer);
    flag_diffs_int(d, "warmup", f->given.warmup, f->warmup, st->warmup);
    flag_diffs_float(d, "dropout", f->given.dropout, f->dropout, t->dropout);
    flag_diffs_float(d, "label-smoothing", f->given.label_smoothing, f->label_smoothing,
                     t->label_smoothing);
}

static int check_resume_flags(TrainRun *r, Error *err) {
    const TrainFlags *f = r->f;
    const TranslateState *st = &r->st;
    const TranslatorConfig *c = &st->cfg;
    FlagDiffs d = {0};
    flag_diffs_text(&d, "data", f->given.data, f->data, st->data);
    flag_diffs_text(&d, "model", f->given.model, TRANSLATE_MODELS[f->model],
                    TRANSLATE_MODELS[st->model]);
    const char *foreign = first_given_foreign_flag(f, st->model);
    if (!f->given.model && foreign)
        return error_set(err, "--resume: %s holds --model %s, and --%s is a flag of the other "
                         "model; leave it out to continue that run", r->cmd.paths.model,
                         TRANSLATE_MODELS[st->model], foreign);
    flag_diffs_int(&d, "max-src", f->given.max_src, f->max_src, c->S);
    flag_diffs_int(&d, "max-len", f->given.max_len, f->max_len, c->max_len);
    flag_diffs_int(&d, "train-size", f->given.train_size, f->train_size, st->train_size);
    flag_diffs_int(&d, "bpe-merges", f->given.bpe_merges, f->bpe_merges, st->bpe_merges);
    if (st->model == TRANSLATE_MODEL_TRANSFORMER) {
        transformer_flag_diffs(&d, f, st);
        if (flag_diffs_refuse(&d, r->cmd.paths.model, err)) return -1;
        train_optim_resume(&r->st.optim, &f->optim, &r->cmd.resumed_with);
        return 0;
    }
    flag_diffs_text(&d, "attention", f->given.attention, TRANSLATE_ATTENTIONS[f->attention],
                    TRANSLATE_ATTENTIONS[st->attention]);
    flag_diffs_int(&d, "embed", f->given.embed, f->embed, c->Es);
    flag_diffs_int(&d, "hidden", f->given.hidden, f->hidden, c->He);
    flag_diffs_int(&d, "dec-embed", f->given.dec_embed, f->dec_embed, c->dec.E);
    flag_diffs_int(&d, "attn-size", f->given.attn_size, f->attn_size, c->dec.attn.A);
    flag_diffs_int(&d, "window", f->given.window, f->window, c->dec.attn.window);
    flag_diffs_switch(&d, "input-feeding", f->given.input_feeding, f->input_feeding,
                      c->dec.input_feeding);
    flag_diffs_switch(&d, "forward-only", f->given.forward_only, f->forward_only, c->forward_only);
    flag_diffs_switch(&d, "reverse-only", f->given.reverse_only, f->reverse_only, c->reverse_only);
    flag_diffs_switch(&d, "annot-embed", f->given.annot_embed, f->annot_embed, c->annot_embed);
    flag_diffs_float(&d, "dropout", f->given.dropout, f->dropout, c->dropout);
    flag_diffs_float(&d, "label-smoothing", f->given.label_smoothing, f->label_smoothing,
                     c->dec.label_smoothing);
    if (flag_diffs_refuse(&d, r->cmd.paths.model, err)) return -1;
    train_optim_resume(&r->st.optim, &f->optim, &r->cmd.resumed_with);
    return 0;
}

// --resume: the state from the checkpoint, the flags given checked against it.
static int resume_cb(void *p, const SafetensorsFile *file, Error *err) {
    TrainRun *r = p;
    if (translate_checkpoint_read_state(file, r->cmd.paths.model, &r->st, err)) return -1;
    return check_resume_flags(r, err);
}

// A new Transformer run's configuration and vocabulary.
static int new_transformer(TrainRun *r, Error *err) {
    const TrainFlags *f = r->f;
    TranslateState *st = &r->st;
    st->cfg = (TranslatorConfig){.S = is_dates(f->data) ? DATES_MAX_SOURCE : f->max_src,
                                 .max_len = is_dates(f->data) ? DATES_TARGET_LEN : f->max_len};
    st->tt = (TtConfig){.d_model = f->d_model, .heads = f->heads, .d_ff = f->d_ff,
                        .enc_layers = f->given.enc_layers ? f->enc_layers : f->layers,
                        .dec_layers = f->given.dec_layers ? f->dec_layers : f->layers,
                        .post_ln = f->post_ln, .dropout = f->dropout,
                        .label_smoothing = f->label_smoothing, .map_layer = f->map_layer,
                        .positions = f->positions};
    st->warmup = f->warmup;
    st->attention = 0;
    if (translate_vocab_fit(st, f->root, err)) return -1;
    return translate_tt_finish(st, err) ? error_prefix(err, "--model transformer") : 0;
}

// A new run's configuration and vocabulary; then both splits, encoded.
static int load_data(void *p, Error *err) {
    TrainRun *r = p;
    const TrainFlags *f = r->f;
    TranslateState *st = &r->st;
    if (!r->cmd.resumed) {
        snprintf(st->data, sizeof st->data, "%s", f->data);
        st->attention = f->attention;
        st->train_size = is_dates(f->data) ? f->train_size : 0;
        st->bpe_merges = is_dates(f->data) ? 0 : f->bpe_merges;
        st->optim = train_optim_new(&f->optim);
        st->model = f->model;
        const char *foreign = first_given_foreign_flag(f, f->model);
        if (foreign)
            return error_set(err, "--%s: not a flag of --model %s", foreign,
                             TRANSLATE_MODELS[f->model]);
    }
    if (!r->cmd.resumed && f->model == TRANSLATE_MODEL_TRANSFORMER) {
        if (new_transformer(r, err)) return -1;
    } else if (!r->cmd.resumed) {
        TranslatorConfig *c = &st->cfg;
        const TranslateAttention a = translate_attention(f->attention);
        if (f->input_feeding && a.query != DECODER_QUERY_CURRENT)
            return error_set(err, "--input-feeding: --attention %s queries the previous state; "
                             "input feeding needs one that queries the current state (luong-*, "
                             "local-*, none)", TRANSLATE_ATTENTIONS[f->attention]);
        if (f->forward_only && a.kind == ATTN_DOT)
            return error_set(err, "--forward-only: luong-dot scores the decoder's %d units against "
                             "annotations of %d; use luong-general or luong-concat", 2 * f->hidden,
                             f->hidden);
        if (f->reverse_only && f->forward_only)
            return error_set(err, "--reverse-only: the encoder reads one way; leave out "
                             "--forward-only (or both, for both directions)");
        if (f->reverse_only && a.kind == ATTN_DOT)
            return error_set(err, "--reverse-only: luong-dot scores the decoder's %d units against "
                             "annotations of %d; use luong-general or luong-concat", 2 * f->hidden,
                             f->hidden);
        if (f->annot_embed && (a.kind == ATTN_DOT || a.kind == ATTN_NONE))
            return error_set(err, "--annot-embed: %s", a.kind == ATTN_NONE
                                 ? "attention none has one fixed context, no position to embed"
                                 : "luong-dot scores the decoder's state against annotations of "
                                   "the same size; use luong-general or luong-concat");
        *c = (TranslatorConfig){.Es = f->embed, .He = f->hidden, .forward_only = f->forward_only,
                                .reverse_only = f->reverse_only, .annot_embed = f->annot_embed,
                                .S = is_dates(f->data) ? DATES_MAX_SOURCE : f->max_src,
                                .max_len = is_dates(f->data) ? DATES_TARGET_LEN : f->max_len,
                                .dropout = f->dropout,
                                .dec = {.E = f->dec_embed, .H = 2 * f->hidden, .nb = 1,
                                        .query = a.query, .input_feeding = f->input_feeding,
                                        .dropout = f->dropout,
                                        .label_smoothing = f->label_smoothing,
                                        .attn = {.kind = a.kind, .A = f->attn_size,
                                                 .window = f->window}}};
        if (translate_vocab_fit(st, f->root, err)) return -1;
        translator_config_finish(c);
    }
    if (translate_data_read(&r->train, st, f->root, TRANSLATE_TRAIN, err) ||
        translate_data_read(&r->valid, st, f->root, TRANSLATE_VALID, err))
        return r->cmd.resumed ? error_prefix(err, "%s: the run's data", r->cmd.paths.model) : -1;
    if (r->train.n < st->optim.batch)
        return error_set(err, "--batch: %d is more than the %d training pairs of %s",
                         st->optim.batch, r->train.n, st->data);
    return 0;
}

static int init_model(void *p, const SafetensorsFile *file, Error *err) {
    TrainRun *r = p;
    Rng init = train_optim_init_rng(&r->st.optim);
    // Rows for this rank's share of a batch (every rank draws the same weights).
    const int rows = train_command_share_most(&r->cmd, r->st.optim.batch);
    if (is_transformer(r)) tt_init(&r->tt, &r->st.tt, rows, &init);
    else translator_init(&r->m, &r->st.cfg, rows, &init);
    r->model_made = true;
    block_layout_like(&r->mom1, params_(r));
    block_layout_like(&r->mom2, params_(r));
    block_alloc(&r->mom1);
    block_alloc(&r->mom2);
    if (r->cmd.resumed &&
        train_checkpoint_read(params_(r), &r->mom1, &r->mom2, file, r->cmd.paths.model, err))
        return -1;
    r->adam = train_optim_adam(&r->st.optim);
    return 0;
}

// The step's buffers.
static long alloc_batch(void *p) {
    TrainRun *r = p;
    const int B = r->st.optim.batch, S = r->st.cfg.S, ML = r->st.cfg.max_len;
    r->src = xmalloc((size_t)B * S * sizeof(int));
    r->src_len = xmalloc((size_t)B * sizeof(int));
    r->tgt = xmalloc((size_t)B * ML * sizeof(int));
    r->tgt_len = xmalloc((size_t)B * sizeof(int));
    r->rows = xmalloc((size_t)B * sizeof(int));
    r->steps_per_epoch = r->train.n / B;
    train_order_init(&r->order, r->train.n);
    return r->steps_per_epoch;
}

static void free_run(void *p) {
    TrainRun *r = p;
    if (r->model_made && is_transformer(r)) tt_free(&r->tt);
    else if (r->model_made) translator_free(&r->m);
    block_free(&r->mom1), block_free(&r->mom2);
    free(r->src), free(r->src_len), free(r->tgt), free(r->tgt_len), free(r->rows);
    train_order_free(&r->order);
    translate_data_free(&r->train), translate_data_free(&r->valid);
    translate_state_free(&r->st);
}

// The Transformer's details of the header.
static void transformer_header(const TrainRun *r, char *buf, size_t n) {
    const TtConfig *t = &r->st.tt;
    char extra[96] = "";
    int k = 0;
    if (r->st.warmup > 0) k += snprintf(extra + k, sizeof extra - k, ", warm-up %d", r->st.warmup);
    if (t->dropout > 0) k += snprintf(extra + k, sizeof extra - k, ", dropout %g", t->dropout);
    if (t->label_smoothing > 0)
        snprintf(extra + k, sizeof extra - k, ", label smoothing %g", t->label_smoothing);
    snprintf(buf, n, "%s, %d training and %d validation pairs, vocabularies %d and %d; "
             "Transformer d %d, %d heads, d_ff %d, %d + %d layers, %s%s; batch %d, lr %g, clip %g",
             r->st.data, r->train.n, r->valid.n, t->Vs, t->V, t->d_model, t->heads, t->d_ff,
             t->enc_layers, t->dec_layers, t->post_ln ? "post-LN" : "pre-LN", extra,
             r->st.optim.batch, r->st.optim.lr, r->st.optim.clip);
}

static void header(const void *p, char *buf, size_t n) {
    const TrainRun *r = p;
    if (is_transformer(r)) {
        transformer_header(r, buf, n);
        return;
    }
    const TranslatorConfig *c = &r->st.cfg;
    char extra[128] = "";
    int k = 0;
    if (c->annot_embed) k += snprintf(extra + k, sizeof extra - k, ", embeddings in the annotations");
    if (c->dec.input_feeding) k += snprintf(extra + k, sizeof extra - k, ", input feeding");
    if (c->dropout > 0) k += snprintf(extra + k, sizeof extra - k, ", dropout %g", c->dropout);
    if (c->dec.label_smoothing > 0)
        k += snprintf(extra + k, sizeof extra - k, ", label smoothing %g", c->dec.label_smoothing);
    if (r->st.optim.lr_decay != 1.0f)
        snprintf(extra + k, sizeof extra - k, ", lr decay %g per epoch", r->st.optim.lr_decay);
    snprintf(buf, n, "%s, %d training and %d validation pairs, vocabularies %d and %d; embed %d, "
             "%s LSTM %d, decoder %d, %s attention%s; batch %d, lr %g, clip %g",
             r->st.data, r->train.n, r->valid.n, c->Vs, c->dec.V, c->Es,
             c->forward_only ? "forward" : c->reverse_only ? "reverse" : "bidirectional", c->He, c->dec.H,
             TRANSLATE_ATTENTIONS[r->st.attention], extra, r->st.optim.batch, r->st.optim.lr,
             r->st.optim.clip);
}

// Copies the pairs at pos (n) into the batch buffers, rows in descending order of target
// length (the decoder packs its rows by step); ties keep pos's order.
static void gather(TrainRun *r, const TranslateData *d, const int *pos, int n) {
    const int S = d->S, ML = d->max_len;
    for (int i = 0; i < n; i++) {
        int j = i;
        while (j > 0 && d->tgt_len[pos[r->rows[j - 1]]] < d->tgt_len[pos[i]]) {
            r->rows[j] = r->rows[j - 1];
            j--;
        }
        r->rows[j] = i;
    }
    for (int b = 0; b < n; b++) {
        const int k = pos[r->rows[b]];
        memcpy(r->src + (size_t)b * S, d->src + (size_t)k * S, (size_t)S * sizeof(int));
        memcpy(r->tgt + (size_t)b * ML, d->tgt + (size_t)k * ML, (size_t)ML * sizeof(int));
        r->src_len[b] = d->src_len[k];
        r->tgt_len[b] = d->tgt_len[k];
    }
}

// The teacher-forced loss per pair over the validation split into *loss (NAN for none):
// each rank runs its share of every batch of --batch pairs, the sums meet (cli/train_command.h).
static int valid_loss(TrainRun *r, double *loss, Error *err) {
    const int B = r->st.optim.batch;
    int *pos = xmalloc((size_t)B * sizeof(int));
    double sum = 0.0;
    for (int i0 = 0; i0 < r->valid.n; i0 += B) {
        const int n = r->valid.n - i0 < B ? r->valid.n - i0 : B;
        int begin, count;
        train_command_share(&r->cmd, n, &begin, &count);
        if (count == 0) continue;  // a last batch of fewer pairs than ranks
        for (int i = 0; i < count; i++) pos[i] = i0 + begin + i;
        gather(r, &r->valid, pos, count);
        sum += (is_transformer(r)
                    ? tt_forward(&r->tt, r->src, r->src_len, r->tgt, r->tgt_len, count, NULL)
                    : translator_forward(&r->m, r->src, r->src_len, r->tgt, r->tgt_len, count)) * count;
    }
    free(pos);
    if (train_command_sum(&r->cmd, &sum, 1, err)) return -1;
    *loss = r->valid.n ? sum / r->valid.n : NAN;
    return 0;
}

static int train_step(TrainRun *r, double *loss, Error *err) {
    TranslateState *st = &r->st;
    const int B = st->optim.batch;
    const int *pos = train_order_batch(&r->order, st->step, r->steps_per_epoch, B, st->optim.seed);
    // This rank's share of the batch (all of it in one process); the loss and gradient are
    // the share's mean until train_command_reduce makes them the batch's.
    const int count = r->cmd.share_count;
    gather(r, &r->train, pos + r->cmd.share_begin, count);
    // The step's dropout masks: a stream of (seed, step), so a resumed run draws the same;
    // rank R > 0 of several draws its share's from a stream of (seed, step, R) (so the
    // masks of N ranks are not one process's: the same distribution, other draws).
    Rng drop;
    uint64_t drop_seed = rng_mix((uint64_t)st->optim.seed ^ 0xD809u, (uint64_t)st->step);
    if (r->cmd.dist.rank > 0) drop_seed = rng_mix(drop_seed, (uint64_t)r->cmd.dist.rank);
    rng_seed(&drop, drop_seed);
    Block *params = params_(r), *grads = grads_(r);
    if (is_transformer(r)) {
        *loss = tt_forward(&r->tt, r->src, r->src_len, r->tgt, r->tgt_len, count, &drop);
        block_zero(grads);
        tt_backward(&r->tt);
    } else {
        *loss = translator_forward_train(&r->m, r->src, r->src_len, r->tgt, r->tgt_len, count, &drop);
        block_zero(grads);
        translator_backward(&r->m);
    }
    if (train_command_reduce(&r->cmd, loss, grads, err)) return -1;
    if (train_check_finite(st->step + 1, "loss", *loss, grads, r->cmd.paths.model, err)) return -1;
    train_norms_add(&r->norms, clip_global_norm(grads->data, grads->numel, st->optim.clip));
    st->step++;
    // The Transformer's --warmup: Vaswani et al.'s schedule peaking at --lr; else --lr-decay's
    // exponential decay per epoch (a factor of 1: --lr itself, bit for bit).
    const float lr = is_transformer(r) && st->warmup > 0
                         ? lr_noam(st->optim.lr, st->warmup, st->step)
                         : lr_exponential(st->optim.lr, st->optim.lr_decay, r->steps_per_epoch, st->step);
    adam_update(params->data, grads->data, r->mom1.data, r->mom2.data, params->numel, &r->adam,
                st->step, lr);
    return 0;
}

static int save(void *p, Error *err) {
    TrainRun *r = p;
    return translate_checkpoint_save(r->cmd.paths.model, &r->st, params_(r), &r->mom1, &r->mom2, err);
}

static int log_validate_save(TrainRun *r, double loss, bool last, Error *err) {
    r->loss_acc += loss;
    r->acc_n++;
    TrainDue due = train_due(&r->cmd.cadence, r->st.step, last);
    if (due.log) {
        r->last_loss = r->loss_acc / r->acc_n;
        if (due.validate && valid_loss(r, &r->last_valid_loss, err)) return -1;
        double row[6] = {(double)r->st.step, r->last_loss, due.validate ? r->last_valid_loss : NAN,
                         0, 0, timer_now() - r->cmd.budget.t0};
        train_norms_take(&r->norms, &row[3], &row[4]);
        train_command_log_row(&r->cmd, row, 6);
        r->loss_acc = 0.0, r->acc_n = 0;
    }
    return due.save ? train_command_save(&r->cmd, r, err) : 0;
}

// The step loop's side of this trainer (cli/train_run.h TrainSteps).
static int step_cb(void *p, double *loss, Error *err) { return train_step(p, loss, err); }

static int after_cb(void *p, double loss, bool last, Error *err) {
    return log_validate_save(p, loss, last, err);
}

static void status_cb(const void *p, double loss, char *buf, size_t cap) {
    const TrainRun *r = p;
    int n = snprintf(buf, cap, "loss %.3f", loss);
    if (isfinite(r->last_valid_loss)) snprintf(buf + n, cap - n, ", valid loss %.3f", r->last_valid_loss);
}

static void valid_summary(const void *p, char *buf, size_t n) {
    const TrainRun *r = p;
    if (isfinite(r->last_valid_loss))
        snprintf(buf, n, "valid loss %.4f (%d pairs)", r->last_valid_loss, r->valid.n);
}

static void json_fields(const void *p, FILE *out) {
    const TrainRun *r = p;
    char a[32], b[32];
    fprintf(out, "\"final_loss\": %s, \"valid_loss\": %s, \"valid_pairs\": %d, ",
            json_number(a, r->last_loss), json_number(b, r->last_valid_loss), r->valid.n);
}

static const TrainCommand TRAIN = {
    .command = "text translate train", .program = "text translate",
    .found_as = "text translate train",
    .log_columns = "step,train_loss,valid_loss,grad_norm,grad_norm_max,seconds",
    .curves = {{"train_loss", "valid_loss"}, {"train loss", "valid loss"}, 1.0f, "translation",
               "cross-entropy per pair"},
    .save_with_validation = true, .ranks = true,
    .resume = resume_cb, .load_data = load_data, .init_model = init_model, .alloc = alloc_batch,
    .header = header, .steps = {step_cb, after_cb, status_cb, "pairs"}, .save = save,
    .valid_summary = valid_summary, .json_fields = json_fields, .free = free_run};

static int cmd_train(int argc, char **argv) {
    TrainFlags f;
    int code;
    if (parse_flags(&f, argc, argv, &code)) return code;
    TrainRun r = {.f = &f, .last_loss = NAN, .last_valid_loss = NAN};
    r.cmd = (TrainCommandRun){.flags = &f.cmd, .step = &r.st.step, .batch = &r.st.optim.batch};
    return train_command_main(&TRAIN, &r.cmd, &r, argc, argv);
}

static void overview(FILE *f) {
    fprintf(f,
            "usage: text translate COMMAND [flags]   (text translate COMMAND --help for its flags)\n"
            "  train    train the translator (--model lstm: the LSTM encoder-decoder, or\n"
            "           transformer) on dates, bible-en-es or a pair file; writes\n"
            "           OUT/model.safetensors, log.csv, loss.png, run.json\n"
            "  eval     greedy or beam decoding of a split: exact match (also by source\n"
            "           length) and, for dates, alignment accuracy; for pairs, corpus BLEU and chrF\n"
            "  translate  each line of a file or standard input, translated (greedy or beam),\n"
            "           one output line each\n"
            "  show     the alignment matrices of a split's sentences (or of lines given), one\n"
            "           PNG each, on one HTML page with source, reference and output\n"
            "  score    sacreBLEU's BLEU and chrF of a split with 95%% bootstrap intervals, and\n"
            "           BLEU by source length (greedy outputs, or a file of them)\n"
            "  report   one HTML page of a run: its figures, loss curve, scores and alignments\n");
}

int text_translate_main(int argc, char **argv) {
    // train runs over mpirun's ranks; the others refuse them in one line
    static const TrainCommandEntry cmds[] = {
        {"train", cmd_train, true},
        {"eval", text_translate_eval_main, false},
        {"translate", text_translate_translate_main, false},
        {"show", text_translate_show_main, false},
        {"score", text_translate_score_main, false},
        {"report", text_translate_report_main, false},
    };
    return train_command_dispatch("text translate", cmds, ARGS_LEN(cmds), overview, argc, argv);
}
