// `text classify`: dispatch and `text classify train` (cli/text_classify.h). eval and
// predict are in cli/text_eval.c.
#include "cli/text_classify.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/args.h"
#include "cli/report_text.h"
#include "cli/text_checkpoint.h"
#include "cli/text_data.h"
#include "cli/text_eval.h"
#include "cli/text_show.h"
#include "cli/threads.h"
#include "cli/train_command.h"
#include "core/adam.h"
#include "core/check.h"
#include "core/csvlog.h"
#include "core/timer.h"

static const char *const POOLS[] = {"keras", "final-dot", "query", "last", "mean", "bow", NULL};
static const char *const KERNELS[] = {"additive", "dot", "scaled-dot", "multiplicative",
                                      "multi-head", "none", NULL};
static const char *const SIDES[] = {"pre", "post", NULL};
// In LstmGateAct's order (seq/lstm_seq.h).
static const char *const GATE_ACTS[] = {"sigmoid", "hard_sigmoid", NULL};

typedef struct {
    const char *data, *root;
    int T, embed, hidden, pool, kernel, attn_size, heads, padding, truncating;
    int folds, fold, bigrams, inner_folds, inner_fold, inner_tail, gate_act;
    long fold_seed;
    float dropout, rec_dropout, embed_l2;
    double valid_share;
    TrainCommandFlags cmd;  // --out, --resume, --force, --json, --threads, the plan
    TrainOptimFlags optim;
    bool bidirectional, masked, nb, word_scores;
    struct {
        bool data, T, embed, hidden, pool, kernel, attn_size, heads, padding, truncating, folds,
            fold, fold_seed, dropout, rec_dropout, embed_l2, valid_share, bidirectional, masked,
            bigrams, nb, word_scores, inner_folds, inner_fold, inner_tail, gate_act;
    } given;
} TrainFlags;

static int parse_flags(TrainFlags *f, int argc, char **argv, int *code) {
    *f = (TrainFlags){.data = "sentiment", .root = "data", .T = 32, .embed = 32, .hidden = 100,
                      .pool = 0, .kernel = 0, .heads = 1, .padding = 1, .truncating = 0,
                      .fold_seed = 1, .dropout = 0.3f, .rec_dropout = 0.2f,
                      .embed_l2 = 1e-3f, .valid_share = 0.2,
                      .cmd = {.threads = 1, .plan = {.epochs = 10, .log_every = 4}},
                      .optim = {.seed = 1, .batch = 100, .lr = 1e-3f, .beta1 = 0.9f, .clip = 0.0f,
                                .lr_decay = 1}};
    const ArgSpec own[] = {
        {"data", ARG_STRING, &f->data, "sentiment (Amazon then Yelp, the demo's), sentiment:amazon|yelp|imdb|all, or a JSON / LABEL<TAB>SENTENCE file", .metavar = "SPEC", .given = &f->given.data},
        {"data-root", ARG_STRING, &f->root, "folder holding sentiment/", .metavar = "DIR"},
        {"out", ARG_STRING, &f->cmd.out, "output folder (model.safetensors, log.csv, loss.png, run.json)", .metavar = "DIR", .required = true},
        {"T", ARG_INT, &f->T, "words per sentence after padding and truncation", .has_min = true, .min = 1, .has_max = true, .max = 4096, .given = &f->given.T},
        {"padding", ARG_CHOICE, &f->padding, "where the padding goes (Keras pad_sequences)", .choices = SIDES, .given = &f->given.padding},
        {"truncating", ARG_CHOICE, &f->truncating, "which end a longer sentence loses (Keras's default: pre)", .choices = SIDES, .given = &f->given.truncating},
        {"embed", ARG_INT, &f->embed, "embedding size", .has_min = true, .min = 1, .has_max = true, .max = 65536, .given = &f->given.embed},
        {"hidden", ARG_INT, &f->hidden, "LSTM units per direction", .has_min = true, .min = 1, .has_max = true, .max = 65536, .given = &f->given.hidden},
        {"bidirectional", ARG_FLAG, &f->bidirectional, "a second LSTM from the last word back; states concatenated", .given = &f->given.bidirectional},
        {"pool", ARG_CHOICE, &f->pool, "keras: the demo's attention (a bias per step); final-dot: the final states as a dot-product query; query: --attention with a learned query; last: the final state (the demo's baseline); mean; bow: no LSTM, a logistic regression on the bag of words (--embed-l2 its L2 penalty)", .choices = POOLS, .given = &f->given.pool},
        {"attention", ARG_CHOICE, &f->kernel, "--pool query: the seq/attention kernel", .choices = KERNELS, .given = &f->given.kernel},
        {"attn-size", ARG_INT, &f->attn_size, "--pool query: additive or multi-head size (0: the state size)", .has_min = true, .min = 0, .has_max = true, .max = 65536, .given = &f->given.attn_size},
        {"heads", ARG_INT, &f->heads, "--pool query --attention multi-head: heads", .has_min = true, .min = 1, .has_max = true, .max = 4096, .given = &f->given.heads},
        {"bigrams", ARG_INT, &f->bigrams, "--pool bow, or --word-scores: hash buckets for pairs of adjacent words, a feature (bow) or a learned score (word scores, started with --nb at its naive-Bayes ratio) each (0: words only)", .has_min = true, .min = 0, .has_max = true, .max = 1 << 24, .given = &f->given.bigrams},
        {"nb", ARG_FLAG, &f->nb, "two classes: --pool bow scales each feature by its naive-Bayes log-count ratio over the training sentences (Wang & Manning 2012's NBSVM features; a logistic regression on them); --word-scores start at the words' ratios", .given = &f->given.nb},
        {"word-scores", ARG_FLAG, &f->word_scores, "--pool keras, query or mean: append a learned score of each word (0, or with --nb its naive-Bayes ratio) to its state, for the attention to weigh and the dense layer to read", .given = &f->given.word_scores},
        {"recurrent-activation", ARG_CHOICE, &f->gate_act, "the LSTM gates i, f, o: sigmoid (tf.keras, Keras >= 2.3) or hard_sigmoid, max(0, min(1, 0.2 x + 0.5)) (standalone Keras <= 2.2's default, the demo's era)", .choices = GATE_ACTS, .given = &f->given.gate_act},
        {"masked", ARG_FLAG, &f->masked, "mask the padding in the LSTM and the pooling (with --padding post; the demo does not)", .given = &f->given.masked},
        {"dropout", ARG_FLOAT, &f->dropout, "LSTM input dropout, one mask per sentence", .has_min = true, .min = 0, .has_max = true, .max = 1, .max_exclusive = true, .given = &f->given.dropout},
        {"rec-dropout", ARG_FLOAT, &f->rec_dropout, "LSTM recurrent dropout, one mask per sentence", .has_min = true, .min = 0, .has_max = true, .max = 1, .max_exclusive = true, .given = &f->given.rec_dropout},
        {"embed-l2", ARG_FLOAT, &f->embed_l2, "L2 penalty on the embedding (bow: on the weights), added to the loss", .has_min = true, .min = 0, .given = &f->given.embed_l2},
        {"valid-share", ARG_DOUBLE, &f->valid_share, "the last share of the sentences (file order) that validates, as Keras's validation_split", .has_min = true, .min = 0, .has_max = true, .max = 1, .max_exclusive = true, .given = &f->given.valid_share},
        {"folds", ARG_INT, &f->folds, "stratified k-fold instead: K folds (0: off)", .has_min = true, .min = 0, .has_max = true, .max = 1000, .given = &f->given.folds},
        {"fold", ARG_INT, &f->fold, "--folds: the fold that validates (0..K-1)", .has_min = true, .min = 0, .given = &f->given.fold},
        {"fold-seed", ARG_LONG, &f->fold_seed, "--folds: the seed of the folds", .has_min = true, .min = 0, .given = &f->given.fold_seed},
        {"inner-folds", ARG_INT, &f->inner_folds, "hold the validation sentences out (fold --fold, or the last --valid-share) and split the training ones by a stratified J-fold of their own, to select a model on the training part alone (0: off)", .has_min = true, .min = 0, .has_max = true, .max = 1000, .given = &f->given.inner_folds},
        {"inner-fold", ARG_INT, &f->inner_fold, "--inner-folds: the inner fold that validates (0..J-1)", .has_min = true, .min = 0, .given = &f->given.inner_fold},
        {"inner-tail", ARG_INT, &f->inner_tail, "--inner-folds: deal only the last N training sentences (file order) to the inner folds, the earlier ones training in every inner fold (the demo's split: 600, its Yelp training sentences; 0: all)", .has_min = true, .min = 0, .given = &f->given.inner_tail},
    };
    static const TrainCommandHelp help = {
        .batch = "sentences per step", .batch_max = TEXT_BATCH_MAX,
        .clip = "clip the global gradient norm at this (0: off, as Keras)",
        .epochs = "train until this many epochs in total",
        .seed = "seed of initialisation, data order and dropout",
        .force = "start a new run in an OUT that holds one, replacing it: its checkpoint, "
                 "run.json, report and pictures go (not with --resume)"};
    ArgSpec specs[ARGS_LEN(own) + TRAIN_COMMAND_SPECS];
    const int n = train_command_specs(specs, own, ARGS_LEN(own), &f->cmd, &f->optim, &help);
    if (args_parse_for_command(argc, argv, specs, n,
                               "text classify train --out DIR [flags]", "text classify", code))
        return 1;
    train_plan_default(&f->cmd.plan);
    return 0;
}

typedef struct {
    const TrainFlags *f;
    TrainCommandRun cmd;  // the folder, its lock, log.csv, the budget (cli/train_command.h)
    TextState st;
    SentenceSet set;
    TextEncoded train, valid;
    TrainWeights w;
    TextParams p, g;
    TextActs acts;
    AdamConfig adam;
    int steps_per_epoch;
    int *ids, *lengths, *labels;  // the step's batch
    TrainOrder order;
    TrainNorms norms;
    double loss_acc;
    long acc_n, acc_correct, acc_rows;
    double last_loss, last_train_acc, last_valid_acc, last_valid_loss;
    int step_correct;  // the last step's correct predictions, for its log row
} TrainRun;

static AttnKind kernel_kind(int i) {
    static const AttnKind k[] = {ATTN_ADDITIVE, ATTN_DOT, ATTN_SCALED_DOT, ATTN_MULTIPLICATIVE,
                                 ATTN_MULTIHEAD, ATTN_NONE};
    return k[i];
}

static int check_resume_flags(TrainRun *r, Error *err) {
    const TrainFlags *f = r->f;
    const TextState *st = &r->st;
    const TextConfig *c = &st->cfg;
    FlagDiffs d = {0};
    flag_diffs_text(&d, "data", f->given.data, f->data, st->data);
    flag_diffs_int(&d, "T", f->given.T, f->T, c->T);
    flag_diffs_text(&d, "padding", f->given.padding, SIDES[f->padding], SIDES[st->padding]);
    flag_diffs_text(&d, "truncating", f->given.truncating, SIDES[f->truncating], SIDES[st->truncating]);
    flag_diffs_int(&d, "embed", f->given.embed, f->embed, c->embed);
    flag_diffs_int(&d, "hidden", f->given.hidden, f->hidden, c->hidden);
    flag_diffs_switch(&d, "bidirectional", f->given.bidirectional, f->bidirectional, c->bidirectional);
    flag_diffs_text(&d, "pool", f->given.pool, POOLS[f->pool], text_pool_name(c->pool));
    flag_diffs_text(&d, "attention", f->given.kernel, attn_kind_name(kernel_kind(f->kernel)),
                    attn_kind_name(c->attn_kind));
    flag_diffs_int(&d, "attn-size", f->given.attn_size, f->attn_size, c->attn_size);
    flag_diffs_int(&d, "heads", f->given.heads, f->heads, c->heads);
    flag_diffs_switch(&d, "masked", f->given.masked, f->masked, c->masked);
    flag_diffs_text(&d, "recurrent-activation", f->given.gate_act, GATE_ACTS[f->gate_act],
                    lstm_gate_act_name(c->gate_act));
    flag_diffs_int(&d, "bigrams", f->given.bigrams, f->bigrams, c->bigrams);
    flag_diffs_switch(&d, "nb", f->given.nb, f->nb, c->nb);
    flag_diffs_switch(&d, "word-scores", f->given.word_scores, f->word_scores, c->word_scores);
    flag_diffs_int(&d, "inner-folds", f->given.inner_folds, f->inner_folds, st->split.inner_folds);
    flag_diffs_int(&d, "inner-fold", f->given.inner_fold, f->inner_fold, st->split.inner_fold);
    flag_diffs_int(&d, "inner-tail", f->given.inner_tail, f->inner_tail, st->split.inner_tail);
    flag_diffs_float(&d, "dropout", f->given.dropout, f->dropout, c->dropout);
    flag_diffs_float(&d, "rec-dropout", f->given.rec_dropout, f->rec_dropout, c->rec_dropout);
    flag_diffs_float(&d, "embed-l2", f->given.embed_l2, f->embed_l2, c->embed_l2);
    flag_diffs_float(&d, "valid-share", f->given.valid_share, f->valid_share, st->split.valid_share);
    flag_diffs_int(&d, "folds", f->given.folds, f->folds, st->split.folds);
    flag_diffs_int(&d, "fold", f->given.fold, f->fold, st->split.fold);
    flag_diffs_int(&d, "fold-seed", f->given.fold_seed, f->fold_seed, (long)st->split.fold_seed);
    if (flag_diffs_refuse(&d, r->cmd.paths.model, err)) return -1;
    train_optim_resume(&r->st.optim, &f->optim, &r->cmd.resumed_with);
    return 0;
}

// --resume: the state from the checkpoint, the flags given checked against it.
static int resume_cb(void *p, const SafetensorsFile *file, Error *err) {
    TrainRun *r = p;
    if (text_checkpoint_read_state(file, r->cmd.paths.model, &r->st, err)) return -1;
    return check_resume_flags(r, err);
}

// The set, its split and its encoding; a new run also fits the tokenizer and sets the
// configuration.
static int load_data(void *p, Error *err) {
    TrainRun *r = p;
    const TrainFlags *f = r->f;
    TextState *st = &r->st;
    const char *spec = r->cmd.resumed ? st->data : f->data;
    if (text_data_read(&r->set, spec, f->root, err))
        return r->cmd.resumed ? error_prefix(err, "%s: the run's data", r->cmd.paths.model) : -1;
    if (!r->cmd.resumed) {
        // The model's lengths count each sentence's words from the first step.
        if (f->masked && f->padding == 0)
            return error_set(err, "--masked needs --padding post (the lengths mask the steps after "
                                  "each sentence's words; pre-padding puts the words last)");
        if (keras_tokenizer_fit(&st->tok, (const char *const *)r->set.text, r->set.n, err))
            return error_prefix(err, "%s", spec);
        TextConfig *c = &st->cfg;
        *c = text_config_default(st->tok.n_words + 1);
        c->T = f->T, c->embed = f->embed, c->hidden = f->hidden, c->bidirectional = f->bidirectional;
        c->pool = (TextPool)f->pool, c->attn_kind = kernel_kind(f->kernel);
        c->attn_size = f->attn_size, c->heads = f->heads, c->masked = f->masked;
        c->classes = r->set.n_classes, c->dropout = f->dropout, c->rec_dropout = f->rec_dropout;
        c->embed_l2 = f->embed_l2, c->bigrams = f->bigrams, c->nb = f->nb;
        c->word_scores = f->word_scores;
        c->gate_act = (LstmGateAct)f->gate_act;
        if (text_config_check(c, err)) return -1;
        st->padding = f->padding == 0 ? KERAS_PRE : KERAS_POST;
        st->truncating = f->truncating == 0 ? KERAS_PRE : KERAS_POST;
        st->split = (TextSplit){.valid_share = f->valid_share, .folds = f->folds, .fold = f->fold,
                                .fold_seed = (uint64_t)f->fold_seed,
                                .inner_folds = f->inner_folds, .inner_fold = f->inner_fold,
                                .inner_tail = f->inner_tail};
        st->optim = train_optim_new(&f->optim);
        snprintf(st->data, sizeof st->data, "%s", f->data);
        st->class_values = xmalloc((size_t)r->set.n_classes * sizeof *st->class_values);
        memcpy(st->class_values, r->set.class_value, (size_t)r->set.n_classes * sizeof(int));
    } else {
        if (r->set.n_classes != st->cfg.classes ||
            memcmp(r->set.class_value, st->class_values, (size_t)st->cfg.classes * sizeof(int)))
            return error_set(err, "%s: the run's data %s no longer holds the %d classes it was trained on",
                             r->cmd.paths.model, spec, st->cfg.classes);
    }
    unsigned char *in_valid = xmalloc((size_t)r->set.n);
    if (text_split_mark(in_valid, &r->set, &st->split, err)) {
        free(in_valid);
        return -1;
    }
    int *ti = xmalloc((size_t)r->set.n * sizeof *ti), *vi = xmalloc((size_t)r->set.n * sizeof *vi);
    int nt = 0, nv = 0;
    for (int i = 0; i < r->set.n; i++) {
        if (in_valid[i] == TEXT_SPLIT_VALID) vi[nv++] = i;
        else if (in_valid[i] == TEXT_SPLIT_TRAIN) ti[nt++] = i;
    }
    free(in_valid);
    int rc = 0;
    if (nt < st->optim.batch)
        rc = error_set(err, "--batch: %d is more than the %d training sentences of %s", st->optim.batch,
                       nt, spec);
    if (rc == 0)
        rc = text_encode(&r->train, &r->set, ti, nt, &st->tok, st->cfg.T, st->padding, st->truncating, err) ||
             text_encode(&r->valid, &r->set, vi, nv, &st->tok, st->cfg.T, st->padding, st->truncating, err);
    free(ti);
    free(vi);
    return rc ? -1 : 0;
}

static int init_model(void *p, const SafetensorsFile *file, Error *err) {
    TrainRun *r = p;
    const TextConfig *c = &r->st.cfg;
    text_layout(&r->w.params, &r->p, c);
    if (train_weights_open(&r->w, r->cmd.resumed ? file : NULL, r->cmd.paths.model, err)) return -1;
    // The gradient views: the same layout on the gradient block.
    Block views = {0};
    text_layout(&views, &r->g, c);
    for (int i = 0; i < views.count; i++) {
        const BlockTensor *t = &views.tensors[i];
        if (t->view) *t->view = r->w.grads.data + r->w.params.tensors[i].offset;
    }
    block_free(&views);
    if (!r->cmd.resumed) {
        Rng init = train_optim_init_rng(&r->st.optim);
        text_init(&r->p, c, &init);
        if (c->nb && c->pool == TEXT_POOL_BOW)
            text_bow_fit_nb(&r->p, c, r->train.ids, r->train.labels, r->train.n);
        if (c->nb && c->word_scores)
            text_fit_word_scores(&r->p, c, r->train.ids, r->train.labels, r->train.n);
    }
    r->adam = train_optim_adam(&r->st.optim);
    r->adam.eps = 1e-7f;  // Keras's, as its epsilon hat: train_step scales it per step
    return 0;
}

// The step's buffers.
static long alloc_batch(void *p) {
    TrainRun *r = p;
    const int B = r->st.optim.batch, T = r->st.cfg.T;
    text_acts_alloc(&r->acts, &r->st.cfg, B);
    r->ids = xmalloc((size_t)B * T * sizeof *r->ids);
    r->lengths = xmalloc((size_t)B * sizeof *r->lengths);
    r->labels = xmalloc((size_t)B * sizeof *r->labels);
    r->steps_per_epoch = r->train.n / B;
    train_order_init(&r->order, r->train.n);
    return r->steps_per_epoch;
}

static void free_run(void *p) {
    TrainRun *r = p;
    text_acts_free(&r->acts);
    train_weights_free(&r->w);
    free(r->ids), free(r->lengths), free(r->labels);
    train_order_free(&r->order);
    text_encoded_free(&r->train), text_encoded_free(&r->valid);
    sentences_free(&r->set);
    text_state_free(&r->st);
}

static void header(const void *p, char *buf, size_t n) {
    const TrainRun *r = p;
    const TextConfig *c = &r->st.cfg;
    if (c->pool == TEXT_POOL_BOW) {
        snprintf(buf, n, "%d training and %d validation sentences, %d words, %d classes; "
                 "bag-of-words logistic regression (%d bigram buckets%s), L2 %g; batch %d, lr %g",
                 r->train.n, r->valid.n, c->vocab - 1, c->classes, c->bigrams,
                 c->nb ? ", naive-Bayes scaled" : "", c->embed_l2, r->st.optim.batch,
                 r->st.optim.lr);
        return;
    }
    char pool[64];
    if (c->pool == TEXT_POOL_QUERY)
        snprintf(pool, sizeof pool, "query pooling (%s)", attn_kind_name(c->attn_kind));
    else
        snprintf(pool, sizeof pool, "%s pooling", text_pool_name(c->pool));
    snprintf(buf, n, "%d training and %d validation sentences, %d words, %d classes; embed %d, "
             "%sLSTM %d%s, %s%s%s%s; batch %d, lr %g",
             r->train.n, r->valid.n, c->vocab - 1, c->classes, c->embed,
             c->bidirectional ? "bidirectional " : "", c->hidden,
             c->gate_act == LSTM_GATE_HARD_SIGMOID ? " (hard_sigmoid gates)" : "", pool,
             c->masked ? ", masked" : "",
             !c->word_scores ? "" : c->nb ? ", word scores from naive-Bayes ratios" : ", word scores",
             c->word_scores && c->bigrams ? " (and of bigrams)" : "",
             r->st.optim.batch, r->st.optim.lr);
}

static int train_step(TrainRun *r, double *loss, int *correct, Error *err) {
    TextState *st = &r->st;
    const int B = st->optim.batch, T = st->cfg.T;
    const int *pos = train_order_batch(&r->order, st->step, r->steps_per_epoch, B, st->optim.seed);
    // This rank's share of the batch (all of it in one process): the loss and gradient are
    // the share's mean until train_command_reduce makes them the batch's (the L2 penalty,
    // in every share's, stays itself: the shares' weights sum to 1).
    const int count = r->cmd.share_count;
    pos += r->cmd.share_begin;
    for (int b = 0; b < count; b++) {
        int i = pos[b];
        memcpy(r->ids + (size_t)b * T, r->train.ids + (size_t)i * T, (size_t)T * sizeof(int));
        r->lengths[b] = r->train.lengths[i];
        r->labels[b] = r->train.labels[i];
    }
    // The step's dropout masks from (seed, step); rank R > 0 of several draws its share's
    // from (seed, step, R): the same distribution as one process's, other draws.
    Rng drop;
    uint64_t drop_seed = rng_mix(rng_mix(st->optim.seed, 0xD0F0), (uint64_t)st->step);
    if (r->cmd.dist.rank > 0) drop_seed = rng_mix(drop_seed, (uint64_t)r->cmd.dist.rank);
    rng_seed(&drop, drop_seed);
    *loss = text_forward(&r->acts, &r->p, &st->cfg, r->ids, r->lengths, r->labels, count, &drop, correct);
    block_zero(&r->w.grads);
    text_backward(&r->g, &r->acts, &r->p, &st->cfg, r->ids, r->labels, count);
    double right = *correct;  // the batch's correct predictions, over the ranks
    if (train_command_reduce(&r->cmd, loss, &r->w.grads, err) ||
        train_command_sum(&r->cmd, &right, 1, err))
        return -1;
    *correct = (int)right;
    if (train_check_finite(st->step + 1, "loss", *loss, &r->w.grads, r->cmd.paths.model, err)) return -1;
    train_norms_add(&r->norms, clip_global_norm(r->w.grads.data, r->w.grads.numel, st->optim.clip));
    st->step++;
    AdamConfig adam = r->adam;
    adam.eps = text_keras_adam_eps(r->adam.eps, r->adam.beta2, st->step);
    adam_update(r->w.params.data, r->w.grads.data, r->w.mom1.data, r->w.mom2.data,
                r->w.params.numel, &adam, st->step, st->optim.lr);
    return 0;
}

static int save(void *p, Error *err) {
    TrainRun *r = p;
    return text_checkpoint_save(r->cmd.paths.model, &r->st, &r->w.params, &r->w.mom1, &r->w.mom2, err);
}

static int log_validate_save(TrainRun *r, double loss, int correct, bool last, Error *err) {
    const TextState *st = &r->st;
    r->loss_acc += loss;
    r->acc_n++;
    r->acc_correct += correct;
    r->acc_rows += st->optim.batch;
    TrainDue due = train_due(&r->cmd.cadence, st->step, last);
    if (due.log) {
        r->last_loss = r->loss_acc / r->acc_n;
        r->last_train_acc = (double)r->acc_correct / r->acc_rows;
        if (due.validate) {
            // Under ranks each rank validates the whole split alike (the same weights).
            TextEval v = text_evaluate(&r->acts, &r->p, &st->cfg, &r->valid);
            r->last_valid_acc = v.accuracy, r->last_valid_loss = v.loss;
        }
        double row[8] = {(double)st->step, r->last_loss, r->last_train_acc,
                         due.validate ? r->last_valid_loss : NAN, due.validate ? r->last_valid_acc : NAN,
                         0, 0, timer_now() - r->cmd.budget.t0};
        train_norms_take(&r->norms, &row[5], &row[6]);
        train_command_log_row(&r->cmd, row, 8);
        r->loss_acc = 0.0, r->acc_n = 0, r->acc_correct = 0, r->acc_rows = 0;
    }
    return due.save ? train_command_save(&r->cmd, r, err) : 0;
}

// The step loop's side of this trainer (cli/train_run.h TrainSteps).
static int step_cb(void *p, double *loss, Error *err) {
    TrainRun *r = p;
    return train_step(r, loss, &r->step_correct, err);
}

static int after_cb(void *p, double loss, bool last, Error *err) {
    TrainRun *r = p;
    return log_validate_save(r, loss, r->step_correct, last, err);
}

static void status_cb(const void *p, double loss, char *buf, size_t cap) {
    const TrainRun *r = p;
    int n = snprintf(buf, cap, "loss %.3f", loss);
    if (isfinite(r->last_valid_acc))
        snprintf(buf + n, cap - n, ", valid accuracy %.2f%%", 100.0 * r->last_valid_acc);
}

static void valid_summary(const void *p, char *buf, size_t n) {
    const TrainRun *r = p;
    if (isfinite(r->last_valid_acc))
        snprintf(buf, n, "valid accuracy %.2f%% (%d sentences)", 100.0 * r->last_valid_acc,
                 r->valid.n);
}

static void json_fields(const void *p, FILE *out) {
    const TrainRun *r = p;
    char a[32], b[32], c[32], d[32];
    fprintf(out, "\"final_loss\": %s, \"train_accuracy\": %s, \"valid_accuracy\": %s, "
            "\"valid_loss\": %s, \"valid_sentences\": %d, ",
            json_number(a, r->last_loss), json_number(b, r->last_train_acc),
            json_number(c, r->last_valid_acc), json_number(d, r->last_valid_loss), r->valid.n);
}

static const TrainCommand TRAIN = {
    .command = "text classify train", .program = "text classify", .found_as = "text classify",
    .log_columns = "step,train_loss,train_accuracy,valid_loss,valid_accuracy,grad_norm,"
                   "grad_norm_max,seconds",
    .curves = {{"train_accuracy", "valid_accuracy"}, {"train accuracy", "valid accuracy"}, 100.0f,
               "sentence classification", "accuracy (%)"},
    .save_with_validation = true, .ranks = true,
    .resume = resume_cb, .load_data = load_data, .init_model = init_model, .alloc = alloc_batch,
    .header = header, .steps = {step_cb, after_cb, status_cb, "sentences"}, .save = save,
    .valid_summary = valid_summary, .json_fields = json_fields, .free = free_run};

static int cmd_train(int argc, char **argv) {
    TrainFlags f;
    int code;
    if (parse_flags(&f, argc, argv, &code)) return code;
    TrainRun r = {.f = &f, .last_loss = NAN, .last_train_acc = NAN, .last_valid_acc = NAN,
                  .last_valid_loss = NAN};
    r.cmd = (TrainCommandRun){.flags = &f.cmd, .step = &r.st.step, .batch = &r.st.optim.batch};
    return train_command_main(&TRAIN, &r.cmd, &r, argc, argv);
}

static void overview(FILE *f) {
    fprintf(f,
            "usage: text classify COMMAND [flags]   (text classify COMMAND --help for its flags)\n"
            "  train    train the sentence classifier (by default the Keras attention demo's\n"
            "           recipe on Amazon and Yelp); writes OUT/model.safetensors, log.csv,\n"
            "           loss.png, run.json\n"
            "  eval     accuracy of a model on its validation sentences (or others)\n"
            "  predict  the label and its probability for each line of a file or standard input\n"
            "  show     attention.html and attention.png: each word shaded by its weight, the\n"
            "           misclassified sentences first\n"
            "  report   write RUN/report.html: a run's results, curves, word shading, settings\n");
}

int text_classify_main(int argc, char **argv) {
    // train runs over mpirun's ranks; the others refuse them in one line
    static const TrainCommandEntry cmds[] = {
        {"train", cmd_train, true},
        {"eval", text_eval_main, false},
        {"predict", text_predict_main, false},
        {"show", text_show_main, false},
        {"report", text_report_main, false},
    };
    return train_command_dispatch("text classify", cmds, ARGS_LEN(cmds), overview, argc, argv);
}
